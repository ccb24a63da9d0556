"""The minute sweep (per tenant): the safety net behind the immediate
enqueues. Re-dispatches running runs whose lease expired and drains due rows."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import Connection, select

from webapp import clock, db
from webapp.workflows.dispatch.drain import drain
from webapp.workflows.engine.resume import advance
from webapp.workflows.store.tables import workflow_runs

log = logging.getLogger("webapp.workflows")


def stale_running(conn: Connection, tenant_id: str, limit: int = 1000) -> list[str]:
    """Running runs nobody is executing: never picked up, or their worker died."""
    return [
        r.run_id
        for r in conn.execute(
            select(workflow_runs.c.run_id)
            .where(
                workflow_runs.c.tenant_id == tenant_id,
                workflow_runs.c.status == "running",
                workflow_runs.c.lease_until < clock.now(),
            )
            .order_by(workflow_runs.c.lease_until)
            .limit(limit)
        )
    ]


def resume_due_runs(tenant_id: str | None, _tick: datetime | None = None) -> None:
    sweep(tenant_id)


def sweep(tenant_id: str | None) -> dict[str, int]:
    """The minute job (per tenant): the safety net behind the immediate
    enqueues. Re-dispatches stale running runs and drains due rows."""
    if tenant_id is None:
        return {}
    with db.reading() as conn:
        stale = stale_running(conn, tenant_id)
    advanced = 0
    for run_id in stale:
        try:
            if advance(tenant_id, run_id) not in ("leased", "not-running"):
                advanced += 1
        except Exception:
            log.exception("stale run could not be advanced", extra={"run_id": run_id})
    drained = drain(tenant_id)
    return {"advanced": advanced, "resumed": drained}


STUCK_AFTER = timedelta(minutes=5)
