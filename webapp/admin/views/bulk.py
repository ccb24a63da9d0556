"""GET|POST /admin/bulk/<cancel|retry|pause>: the runs list's bulk actions on
every run its filter matches (`flask workflows cancel|retry|pause --filter
...`, through `webapp.workflows.bulk`: its filter, its matching, its one-run
functions with their checks, the admin as actor).

The GET (the list's button) changes nothing: it counts the matching runs and
asks "Cancel 12 runs?" with the filter. Only the POST of that confirmation
acts, on the runs the question counted that still match the filter then.
The confirmation carries those runs' ids, not only their count: a run's
`started_at` (the list's order) changes when a queued run starts, so "the
runs up to the newest one counted" would silently drop runs the admin saw,
and a count alone cannot tell the runs counted from runs that match since.
With the ids it acts on no run the admin was not shown, so never on more
than the count, and says which of them no longer match. The ids cost 37
bytes a run, so a question covers at most MAX_AT_ONCE runs and never more
than fit the request size limit (MAX_CONTENT_LENGTH); above that it names
the CLI command.
"""

from __future__ import annotations

from typing import Any

from flask import Response, abort, current_app, request
from flask_babel import gettext

from webapp import tenants
from webapp.admin import access, present
from webapp.admin.access import bp
from webapp.admin.forms import FILTER_FIELDS, BulkForm, RunFilterForm
from webapp.admin.views.runs import known_tenants, runs_context
from webapp.core import db
from webapp.ui import pages
from webapp.workflows import bulk

# More than this is a job for the CLI (a request acts on each run in its own
# transaction; the CLI has no request timeout).
MAX_AT_ONCE = 1000
ID_BYTES = 37  # a run id and its comma in the confirmation's `runs` field


def most_at_once() -> int:
    """MAX_AT_ONCE, or fewer when their ids would not fit a request."""
    room = int(current_app.config.get("MAX_CONTENT_LENGTH") or 0) - 4096
    return max(1, min(MAX_AT_ONCE, room // ID_BYTES)) if room > 0 else 1


SKIPPED_SHOWN = 20


def _invalid(action: str, form: RunFilterForm) -> Response:
    """A bad field: nothing is counted or done."""
    problems = "; ".join(str(e) for f in form if f.name in FILTER_FIELDS for e in f.errors)
    if problems:
        error = gettext("admin.bulk.badFilter", problems=problems)
    else:  # the filter is fine: the run ids the confirmation carried are not
        error = gettext("admin.bulk.badForm")
    return _page(action, form, mode="invalid", error_text=error, status=422)


def _page(action: str, form: RunFilterForm, status: int = 200, **ctx: Any) -> Response:
    return pages.render(
        "admin/bulk.html",
        "admin/_bulk.html",
        has_errors=status >= 400,
        status=status,
        action=action,
        form=form,
        filters=form.filter_args(),
        **ctx,
    )


def _described(form: RunFilterForm) -> str:
    """The filter in the list's words: "Tenant: default · Status: Failed · ..."."""
    f = form.run_filter(tenants.DEFAULT_TENANT)
    parts = [(gettext("admin.runs.tenant"), f.tenant)]
    if form.status.data:
        parts.append((gettext("admin.runs.status"), gettext(f"admin.status.{form.status.data}")))
    if f.workflow:
        parts.append((gettext("admin.runs.workflow"), f.workflow))
    if f.started_after:
        parts.append((gettext("admin.runs.startedAfter"), present.when(f.started_after)))
    if f.started_before:
        parts.append((gettext("admin.runs.startedBefore"), present.when(f.started_before)))
    return " · ".join(f"{label}: {value}" for label, value in parts)


def _question(
    action: str, form: RunFilterForm, rows: list[Any], status: int = 200, **ctx: Any
) -> Response:
    """The confirmation for `rows` (or why there is none)."""
    text = _described(form)
    n = len(rows)
    if n == 0:
        return _page(action, form, mode="none", filter_text=text, status=status, **ctx)
    if n > most_at_once():
        f = bulk.text_of(form.bulk_filter(tenants.DEFAULT_TENANT))
        cli = f"flask --app wsgi workflows {action} --filter {f} --yes"
        return _page(
            action,
            form,
            mode="tooMany",
            count=n,
            most=most_at_once(),
            cli=cli,
            status=status,
            **ctx,
        )
    key = f"admin.bulk.{action}Confirm" + ("One" if n == 1 else "")
    return _page(
        action,
        form,
        mode="confirm",
        question=gettext(key, count=n),
        count=n,
        run_ids=",".join(r.run_id for r in rows),
        filter_text=text,
        status=status,
        **ctx,
    )


@bp.get("/bulk/<action>")
def bulk_confirm(action: str) -> Response:
    if action not in bulk.ACTIONS:
        abort(404)
    form = RunFilterForm(request.args, tenants=known_tenants())
    if not form.validate():
        return _invalid(action, form)
    with db.reading() as conn:
        rows = bulk.matching_rows(conn, form.bulk_filter(tenants.DEFAULT_TENANT))
    return _question(action, form, rows)


@bp.post("/bulk/<action>")
def bulk_act(action: str) -> Response:
    if action not in bulk.ACTIONS:
        abort(404)
    form = BulkForm(request.form, most=most_at_once(), tenants=known_tenants())
    if not form.validate():
        return _invalid(action, form)
    asked = form.run_ids
    with db.reading() as conn:
        rows = bulk.matching_rows(conn, form.bulk_filter(tenants.DEFAULT_TENANT), among=asked)
    if not rows:
        return _question(action, form, rows, status=409)
    done, errors = bulk.apply(action, bulk.in_order(action, rows), access.actor())
    gone = gettext("admin.bulk.noLongerMatches")
    still = {r.run_id for r in rows}
    skipped = [(i, errors.get(i, gone)) for i in asked if i not in still or i in errors]
    result = gettext(f"admin.bulk.{action}Done", done=done, count=len(asked))
    if skipped:
        result += " " + gettext("admin.bulk.skipped", skipped=len(skipped))
    return pages.render(
        "admin/runs.html",
        "admin/_bulk.html",
        oob=["admin/_runs_table.html"],
        success=result,
        success_text=result,
        skipped=skipped[:SKIPPED_SHOWN],
        skipped_more=max(0, len(skipped) - SKIPPED_SHOWN),
        **runs_context(form),
    )
