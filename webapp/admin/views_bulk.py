"""GET|POST /admin/bulk/<cancel|retry|pause>: the runs list's bulk actions on
every run its filter matches (`flask workflows cancel|retry|pause --filter
...`, through `webapp.workflows.bulk`: its filter, its matching, its one-run
functions with their checks, the admin as actor).

The GET (the list's button) changes nothing: it counts the matching runs and
asks "Cancel 12 runs?" with the filter. Only the POST of that confirmation
acts, and on no more runs than the question showed. The confirmation carries
the count and the newest run counted (its `(started_at, run_id)`, the list's
keyset cursor) rather than the run ids, which would make a form of up to
MAX_AT_ONCE ids: the POST matches the filter again and keeps the runs up to
that newest one, so runs triggered since the question are never part of it;
if more runs than shown still match (runs that came to match since, say by
failing), it does nothing and asks again with the new count. So it acts on
the runs that match when the admin confirms, at most as many as they saw.
"""

from __future__ import annotations

from typing import Any

from flask import Response, abort, request
from flask_babel import gettext

from webapp import db, pages, tenants
from webapp.admin import access, present
from webapp.admin.access import bp
from webapp.admin.forms import (
    FILTER_FIELDS,
    BulkForm,
    RunFilterForm,
    cursor_text,
    parse_cursor,
)
from webapp.admin.views_runs import known_tenants, runs_context
from webapp.workflows import bulk

# More than this is a job for the CLI (a request acts on each run in its own
# transaction; the CLI has no request timeout).
MAX_AT_ONCE = 1000
SKIPPED_SHOWN = 20


def _invalid(action: str, form: RunFilterForm) -> Response:
    """A bad field: nothing is counted or done."""
    problems = "; ".join(str(e) for f in form if f.name in FILTER_FIELDS for e in f.errors)
    if problems:
        error = gettext("admin.bulk.badFilter", problems=problems)
    else:  # the filter is fine: the count or cursor the confirmation carried is not
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
    if n > MAX_AT_ONCE:
        f = bulk.text_of(form.bulk_filter(tenants.DEFAULT_TENANT))
        cli = f"flask --app wsgi workflows {action} --filter {f} --yes"
        return _page(
            action, form, mode="tooMany", count=n, most=MAX_AT_ONCE, cli=cli, status=status, **ctx
        )
    key = f"admin.bulk.{action}Confirm" + ("One" if n == 1 else "")
    return _page(
        action,
        form,
        mode="confirm",
        question=gettext(key, count=n),
        count=n,
        upto=cursor_text(max((r.started_at, r.run_id) for r in rows)),
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
    form = BulkForm(request.form, tenants=known_tenants())
    if not form.validate():
        return _invalid(action, form)
    shown, upto = int(form.count.data), parse_cursor(form.upto.data)
    with db.reading() as conn:
        rows = bulk.matching_rows(conn, form.bulk_filter(tenants.DEFAULT_TENANT))
    rows = [r for r in rows if upto is not None and (r.started_at, r.run_id) <= upto]
    if not rows:
        return _question(action, form, rows, status=409)
    if len(rows) > shown:
        grew = gettext("admin.bulk.grew", count=len(rows), shown=shown)
        return _question(action, form, rows, status=409, error_text=grew)
    done, errors = bulk.apply(action, [r.run_id for r in rows], access.actor())
    result = gettext(f"admin.bulk.{action}Done", done=done, count=len(rows))
    if errors:
        result += " " + gettext("admin.bulk.skipped", skipped=len(errors))
    return pages.render(
        "admin/runs.html",
        "admin/_bulk.html",
        oob=["admin/_runs_table.html"],
        success=result,
        success_text=result,
        skipped=list(errors.items())[:SKIPPED_SHOWN],
        skipped_more=max(0, len(errors) - SKIPPED_SHOWN),
        **runs_context(form),
    )
