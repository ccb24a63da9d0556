"""The privacy center, `/privacy`: Export, Your activity, Restrict processing and
Delete account, each its own section answered alone to htmx (webapp/ui/pages.py
decides) and as the whole page without JavaScript.

*Delete account* is the danger zone the profile shows too (webapp/ui/danger_zone.py,
`_danger_zone.html`), answered on this screen; the rest of the plumbing is
webapp/ui/sections.py's.
"""

from __future__ import annotations

from pathlib import Path

from flask import (
    Blueprint,
    Response,
    current_app,
    flash,
    make_response,
    redirect,
    render_template,
    request,
    send_file,
    session,
    url_for,
)
from flask_babel import gettext
from flask_login import login_required
from markupsafe import Markup

import webapp.workflows as wf
from webapp.accounts import i18n, ratelimit, restriction
from webapp.accounts.result import Result
from webapp.accounts.session import sign_out, signed_in_user
from webapp.core import db
from webapp.core.render_cache import RenderCache
from webapp.privacy import activity, downloads, exports, forms
from webapp.privacy import shown as privacy_shown
from webapp.privacy.export_workflow import folder, run_id_of
from webapp.ui import danger_zone, pages, sections
from webapp.ui import forms as forms_core
from webapp.ui.sections import Screen, View

bp = Blueprint("privacy", __name__, url_prefix="/privacy")
pages.no_store(bp)


def _danger() -> dict[str, str]:
    return {
        "id": "privacy-delete",
        "title": gettext("privacy.delete.title"),
        "delete_url": url_for("privacy.delete"),
        "cancel_url": url_for("privacy.cancel_deletion"),
    }


def respond(view: View, status: int = 200, live: str | None = None) -> Response:
    """The privacy page or one of its sections."""
    try:
        before = activity.parse_before(request.args.get("before"))
    except ValueError:
        before = None
    with db.reading() as conn:
        job = exports.latest(conn, view.user)
        entries = activity.page(conn, view.user, before)
    return _render(view, job, entries, status, live)


def _render(
    view: View,
    job: exports.Job | None,
    entries: activity.Page,
    status: int = 200,
    live: str | None = None,
) -> Response:
    section = view.section
    fragment = {
        None: None,
        danger_zone.SECTION: "_danger_zone.html",
    }.get(section, f"privacy/_{section}.html")
    return pages.render(
        "privacy/page.html",
        fragment,
        success=live or view.success,
        has_errors=forms_core.has_errors(view.form),
        status=status,
        v=view,
        user=view.user,
        export_job=job,
        export_ready=_ready(job),
        export_run=wf.run_head(run_id_of(job.id)) if job is not None and job.active else None,
        activity=entries,
        danger=_danger(),
    )


def _ready(job: exports.Job | None) -> bool:
    return job is not None and downloads.check(job, folder()) == downloads.OK


# The page as a plain GET shows it: one rendering per browser session, at most
# this many per app (about 7 KB of HTML each, plus up to ~12 KB for the rows
# of its key: at most ~20 MB per process).
KEPT_PAGES = 1000


def blank_page(view: View) -> Response:
    """`respond(view)` for a plain GET of the page's top (no activity cursor),
    kept per browser session (its CSRF secret, which the page's tokens are
    signed from) and rendered again as soon as anything it shows may differ:
    the account's version (its row: email, deletion, restriction, admin, the
    language it chose), the language as chosen for this request, the kind of
    request, the rows the page shows (read in one statement on every request:
    the newest export job and the first page of Your activity) and whether
    the export's file can be downloaded now (its expiry passes and its file is
    deleted without a change of any row). The page (nav included) shows
    nothing else; whoever adds to it adds to this key."""
    user = view.user
    shown = privacy_shown.read(user)
    job = shown.job
    csrf_secret = session.get(current_app.config["WTF_CSRF_FIELD_NAME"])
    if not csrf_secret:  # the render makes it
        return _render(view, job, shown.activity)
    owner = (user.tenant_id, user.id, csrf_secret, forms_core.is_fragment())
    version = (user.version, i18n.select_locale(), request.script_root, shown.rows, _ready(job))
    kept: RenderCache = current_app.extensions["privacy.blank_pages"]
    html = kept.get_or_render(
        owner,
        version,
        lambda: Markup(_render(view, job, shown.activity).get_data(as_text=True)),
    )
    resp = make_response(str(html), 200)
    resp.vary.add("HX-Request")  # as pages.render answers
    return resp


PRIVACY = Screen(respond, forms.blank)
danger_zone.add_routes(bp, PRIVACY)


def _answer(section: str, result: Result, form: forms.Form | None = None) -> Response:
    return sections.result_response(PRIVACY, section, result, form)


@bp.get("")
@login_required
def show() -> Response:
    view = PRIVACY.view(signed_in_user(), None)
    return respond(view) if "before" in request.args else blank_page(view)


@bp.get("/export")
@login_required
def export_status() -> Response:
    """The section as it is now: htmx polls it every 2 s while the export is
    being prepared; without JavaScript the Refresh link loads the page."""
    me = signed_in_user()
    live = None
    if request.args.get("poll") and forms_core.is_fragment():
        with db.reading() as conn:
            job = exports.latest(conn, me)
        if job is not None and job.active and wf.run_head(run_id_of(job.id)) is None:
            # Unchanged: 204 swaps nothing (htmx-config), so focus stays and the
            # status is not re-announced; the polling goes on. Once the job's
            # run exists the section is sent again: it then follows the run live.
            resp = make_response("", 204)
            resp.vary.add("HX-Request")
            return resp
        if job is not None:  # just finished: announce it
            live = gettext(
                "privacy.export.ready" if job.status == "done" else "privacy.export.failed"
            )
    return respond(PRIVACY.view(me, "export"), live=live)


@bp.post("/export")
@login_required
def export_request() -> Response:
    result = exports.request_export(signed_in_user())
    if not result.ok:
        return _answer("export", result, forms.ExportForm())
    return respond(
        PRIVACY.view(sections.reread(), "export"), live=gettext("privacy.export.pending")
    )


@bp.get("/exports/<job_id>/download")
@login_required
def download(job_id: str) -> Response:
    me = signed_in_user()
    client = downloads.Client(ratelimit.client_ip(), request.headers.get("User-Agent", ""))
    with db.transaction() as conn:
        job = exports.owned(conn, job_id, me)  # another user's job: exactly like none
        result = downloads.check(job, folder())
        downloads.record(conn, job, "job", result, client, me.tenant_id, me.id)
    if result != downloads.OK or job is None or job.file_name is None:
        return not_available(result)
    return export_file(folder() / job.file_name, job.id)


def not_available(result: str) -> Response:
    key = {
        downloads.EXPIRED: "privacy.download.expired",
        downloads.UNAVAILABLE: "privacy.download.unavailable",
    }.get(result, "privacy.download.notFound")
    return make_response(render_template("error.html", message=gettext(key)), 404)


def export_file(path: Path, job_id: str) -> Response:
    resp = send_file(
        path,
        mimetype="application/zip",
        as_attachment=True,
        download_name=f"data-export-{job_id}.zip",
        max_age=0,
    )
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.get("/activity")
@login_required
def activity_more() -> Response:
    """The next page of Your activity: the items alone for htmx (appended in
    place of the Show more button), else the page from that point on."""
    try:
        before = activity.parse_before(request.args.get("before"))
    except ValueError:
        return make_response(
            render_template("error.html", message=gettext("privacy.activity.badCursor")), 400
        )
    me = signed_in_user()
    if not forms_core.is_fragment():
        target = url_for("privacy.show", before=request.args.get("before"))
        return redirect(target + "#privacy-activity")  # type: ignore[return-value]
    with db.reading() as conn:
        entries = activity.page(conn, me, before)
    resp = make_response(
        render_template("privacy/_activity_items.html", activity=entries, appended=True)
    )
    resp.vary.add("HX-Request")
    return resp


@bp.post("/restrict")
@login_required
def restrict() -> Response:
    form = forms.RestrictForm(request.form)
    if not form.validate():
        return sections.rejected(PRIVACY, "restrict", form)
    result = sections.password_checked(
        lambda: restriction.restrict(signed_in_user(), form.current_password.data)
    )
    if result is None:
        return sections.limited(PRIVACY, "restrict", form)
    if not result.ok:
        return _answer("restrict", result, form)
    sign_out()  # its sign-in row is gone already; drop the cookies too
    flash(restriction.RESTRICTED_TEXT)
    target = url_for("accounts.login")
    if forms_core.is_fragment():
        return pages.htmx_redirect(target)
    return redirect(target)  # type: ignore[return-value]


SECTION_OF = {
    "export_request": "export",
    "export_status": "export",
    "restrict": "restrict",
    "delete": "danger",
    "cancel_deletion": "danger",
}
sections.on_unexpected_error(bp, PRIVACY, SECTION_OF.get, "privacy")
