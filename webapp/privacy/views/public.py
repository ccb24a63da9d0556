"""The privacy center's pages that need no sign-in: the export download link
from the mail, and deletion by a link sent to the address (`/delete-account`)."""

from __future__ import annotations

from flask import Blueprint, Response, make_response, render_template, request
from flask_babel import format_date, gettext

from webapp.accounts import deletion, ratelimit
from webapp.core import db
from webapp.privacy import downloads
from webapp.privacy.export_workflow import folder
from webapp.privacy.forms import DeleteLinkForm
from webapp.privacy.views.center import export_file, not_available
from webapp.tenants import DEFAULT_TENANT
from webapp.ui import pages

bp = Blueprint("privacy_public", __name__)
pages.no_store(bp, no_referrer=True)  # the path carries a token


@bp.get("/privacy/download/<token>")
def download_by_token(token: str) -> Response:
    """The mail's link: usable until it expires, by whoever holds it (like the
    mail itself). 30 requests a minute per client address."""
    if not ratelimit.hit("export-download-ip", ratelimit.client_ip()):
        return make_response(
            render_template("error.html", message=gettext("auth.errors.tooManyAttempts")), 429
        )
    client = downloads.Client(ratelimit.client_ip(), request.headers.get("User-Agent", ""))
    with db.transaction() as conn:
        job, hashed = downloads.job_for_token(conn, token)
        result = downloads.check(job, folder())
        if hashed is not None:  # a token we never issued leaves no trace
            tenant = job.tenant_id if job else DEFAULT_TENANT
            downloads.record(conn, job, "token", result if job else "expired", client, tenant)
    if result != downloads.OK or job is None or job.file_name is None:
        return not_available(result if hashed else downloads.NOT_FOUND)
    return export_file(folder() / job.file_name, job.id)


@bp.route("/delete-account", methods=["GET", "POST"])
def delete_account() -> Response:
    if request.method == "GET":
        return _page("privacy/delete_account.html", form=DeleteLinkForm())
    form = DeleteLinkForm(request.form)
    if not ratelimit.hit("deletion-link-ip", ratelimit.client_ip()):
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return _page("privacy/delete_account.html", 429, form=form)
    if not form.validate():
        return _page("privacy/delete_account.html", 422, form=form)
    outcome = deletion.request_link(form.email.data)
    return _page("privacy/delete_account.html", form=DeleteLinkForm(), sent=gettext(outcome.key))


@bp.get("/delete-account/<token>")
def delete_account_link(token: str) -> Response:
    outcome = deletion.check_link(token)
    return _page(
        "privacy/delete_confirm.html", 200 if outcome.ok else 400, token=token, outcome=outcome
    )


@bp.post("/delete-account/<token>")
def delete_account_confirm(token: str) -> Response:
    if not ratelimit.hit("deletion-link-ip", ratelimit.client_ip()):
        return _page(
            "privacy/delete_confirm.html",
            429,
            token=token,
            message=gettext("auth.errors.tooManyAttempts"),
        )
    outcome = deletion.confirm_link(token)
    if not outcome.ok:
        return _page("privacy/delete_confirm.html", 400, token=token, outcome=outcome)
    date = format_date(outcome.params["due_at"], format="long")
    return _page(
        "privacy/delete_confirm.html",
        token=token,
        outcome=outcome,
        done=gettext("privacy.deleteLink.scheduled", date=date),
    )


def _page(template: str, status: int = 200, **ctx: object) -> Response:
    return make_response(render_template(template, **ctx), status)
