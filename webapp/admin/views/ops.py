"""/admin/stuck and /admin/projections (parked events: Retry, Skip)."""

from __future__ import annotations

from flask import Response, abort, request
from flask_babel import gettext

from webapp import tenants
from webapp.admin import access, queries
from webapp.admin.access import bp
from webapp.core import db
from webapp.eventstore import get_events, projections
from webapp.eventstore import parked as parked_events
from webapp.ui import pages
from webapp.workflows.dispatch.sweep import STUCK_AFTER


def chosen_tenant() -> tuple[str, list[str]]:
    """The `tenant` query parameter (default: the default tenant); unknown: 404."""
    with db.reading() as conn:
        known = tenants.all_ids(conn)
    tenant = request.args.get("tenant") or tenants.DEFAULT_TENANT
    if tenant not in known:
        abort(404)
    return tenant, known


@bp.get("/stuck")
def stuck() -> Response:
    tenant, known = chosen_tenant()
    with db.reading() as conn:
        rows = queries.stuck_runs(conn, tenant)
        report = queries.deploy_check(conn)
    return pages.render(
        "admin/stuck.html",
        rows=rows,
        tenant=tenant,
        tenant_ids=known,
        report=report,
        stuck_after=STUCK_AFTER,
    )


def _projections_page(
    success: str | None = None, error: str | None = None, status: int = 200
) -> Response:
    with db.reading() as conn:
        cursors = projections.status(conn)
        parked = parked_events.list_parked(conn)
        found = get_events(conn, [p.event_id for p in parked])
    return pages.render(
        "admin/projections.html",
        "admin/_parked.html",
        success=success,
        has_errors=error is not None,
        status=status,
        cursors=cursors,
        parked=parked,
        event_types={i: e.type for i, e in found.items()},
        success_text=success,
        error_text=error,
    )


@bp.get("/projections")
def projections_page() -> Response:
    return _projections_page()


@bp.post("/projections/parked/<int:parked_id>/retry")
def retry_parked(parked_id: int) -> Response:
    try:
        applied = parked_events.retry_parked(parked_id, actor=access.actor())
    except LookupError:
        return _projections_page(error=gettext("admin.parked.gone"), status=409)
    if not applied:
        return _projections_page(error=gettext("admin.parked.failedAgain"), status=409)
    return _projections_page(success=gettext("admin.parked.applied"))


@bp.post("/projections/parked/<int:parked_id>/skip")
def skip_parked(parked_id: int) -> Response:
    try:
        parked_events.skip_parked(parked_id, actor=access.actor())
    except LookupError:
        return _projections_page(error=gettext("admin.parked.gone"), status=409)
    return _projections_page(success=gettext("admin.parked.skipped"))
