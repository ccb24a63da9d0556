"""/admin/runs (the list) and /admin/runs/<id> (one run: Cancel, Retry, Pause,
Resume the run or its whole workflow).

Every action goes through a confirmation: a link to a confirm page (with
htmx the confirm form replaces the buttons in place), whose POST calls the
same functions as `flask workflows cancel|retry|pause|resume|pause-workflow|
resume-workflow`, with the admin as actor."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, redirect, request, url_for
from flask_babel import gettext
from werkzeug.wrappers import Response as BaseResponse

from webapp import tenants
from webapp.admin import access, queries
from webapp.admin.access import bp
from webapp.admin.forms import RunFilterForm, cursor_text
from webapp.core import db
from webapp.ui import pages
from webapp.workflows import operations as ops
from webapp.workflows import pausing

ACTIONS = {
    "cancel": ("admin.run.cancelled", "admin.run.cancelConfirm"),
    "retry": ("admin.run.retried", "admin.run.retryConfirm"),
    "pause": ("admin.run.pausedDone", "admin.run.pauseConfirm"),
    "resume": ("admin.run.resumedDone", "admin.run.resumeConfirm"),
    "pause-workflow": ("admin.run.pause-workflowDone", "admin.run.pause-workflowConfirm"),
    "resume-workflow": ("admin.run.resume-workflowDone", "admin.run.resume-workflowConfirm"),
}


@bp.get("/")
def home() -> BaseResponse:
    return redirect(url_for("admin.runs"))


@bp.get("/runs")
def runs() -> Response:
    form = RunFilterForm(request.args, tenants=known_tenants())
    form.validate()
    return pages.render(
        "admin/runs.html",
        "admin/_runs_table.html",
        has_errors=form.has_errors,
        status=422 if form.has_errors else 200,
        **runs_context(form),
    )


def known_tenants() -> list[str]:
    with db.reading() as conn:
        return tenants.all_ids(conn)


def runs_context(form: RunFilterForm) -> dict[str, Any]:
    """What runs.html and its table show for a validated filter form."""
    f = form.run_filter(tenants.DEFAULT_TENANT)
    with db.reading() as conn:
        page = queries.runs_page(conn, f)
    args: dict[str, Any] = form.filter_args()
    next_url = (
        url_for("admin.runs", **args, before=cursor_text(page.next_cursor))
        if page.next_cursor
        else None
    )
    return dict(
        form=form,
        runs_page=page,
        tenant_ids=form.tenants,
        tenant=f.tenant,
        filters=args,
        next_url=next_url,
        first_url=url_for("admin.runs", **args) if f.before else None,
        refresh_url=url_for(
            "admin.runs", **args, **({"before": form.before.data} if f.before else {})
        ),
        step_name=queries.step_name,
    )


def detail(run_id: str) -> queries.RunDetail:
    with db.reading() as conn:
        detail = queries.run_detail(conn, run_id)
    if detail is None:
        abort(404)
    return detail


def run_page(
    run_id: str, *, success: str | None = None, error: str | None = None, status: int = 200
) -> Response:
    return pages.render(
        "admin/run.html",
        "admin/_run.html",
        success=success,
        has_errors=error is not None,
        status=status,
        d=detail(run_id),
        success_text=success,
        error_text=error,
        step_name=queries.step_name,
    )


@bp.get("/runs/<run_id>")
def run(run_id: str) -> Response:
    return run_page(run_id)


def _allowed(action: str, d: queries.RunDetail) -> bool:
    return bool(getattr(d, "can_" + action.replace("-", "_")))


@bp.get("/runs/<run_id>/<action>")
def confirm(run_id: str, action: str) -> Response:
    if action not in ACTIONS:
        abort(404)
    d = detail(run_id)
    if not _allowed(action, d):
        return run_page(run_id, error=gettext(f"admin.run.{action}NotAllowed"), status=409)
    return pages.render(
        "admin/confirm.html",
        "admin/_confirm.html",
        d=d,
        action=action,
        question=gettext(ACTIONS[action][1]),
    )


@bp.post("/runs/<run_id>/<action>")
def act(run_id: str, action: str) -> Response:
    if action not in ACTIONS:
        abort(404)
    d = detail(run_id)
    try:
        _do(action, d)
    except ops.OperationError as exc:
        return run_page(
            run_id, error=gettext("admin.run.actionFailed", reason=str(exc)), status=409
        )
    return run_page(run_id, success=gettext(ACTIONS[action][0]))


def _do(action: str, d: queries.RunDetail) -> None:
    """The CLI's function for the action, with the admin as actor."""
    run_id, name, actor = d.run.run_id, d.run.workflow_name, access.actor()
    if action == "cancel":
        ops.cancel(run_id, reason="cancelled in the console", actor=actor)
    elif action == "retry":
        ops.retry(run_id, actor=actor)
    elif action == "pause":
        pausing.pause(run_id, actor=actor)
    elif action == "resume":
        pausing.unpause(run_id, actor=actor)
    elif action == "pause-workflow":
        pausing.pause_workflow(name, actor=actor)
    else:
        pausing.resume_workflow(name, actor=actor)
