"""The minute sweep (per tenant): the safety net behind the immediate
signals. Re-dispatches running runs whose lease expired, does the look-backs
still owed (a worker died between a wait's commit and its look-back), and
drains due rows."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from webapp.core import db
from webapp.workflows.dispatch.drain import drain
from webapp.workflows.engine import resume
from webapp.workflows.engine.resume import ResumeResult
from webapp.workflows.store import pending, queries, slots

log = logging.getLogger("webapp.workflows")

STUCK_AFTER = timedelta(minutes=5)


def resume_due_runs(tenant_id: str | None, _tick: datetime | None = None) -> None:
    sweep(tenant_id)


def sweep(tenant_id: str | None) -> dict[str, int]:
    """The minute job (per tenant): the safety net behind the immediate
    signals. Re-dispatches stale running runs, does owed look-backs and drains
    due rows."""
    if tenant_id is None:
        return {}
    with db.reading() as conn:
        stale = [r.run_id for r in queries.stale_running(conn, tenant_id)]
    advanced = 0
    for run_id in stale:
        try:
            if resume.advance(tenant_id, run_id) not in (
                ResumeResult.LEASED,
                ResumeResult.NOT_RUNNING,
            ):
                advanced += 1
        except Exception:
            log.exception("stale run could not be advanced", extra={"run_id": run_id})
    looked_back = pending.look_back_owed(tenant_id)
    drained = drain(tenant_id)
    return {
        "advanced": advanced,
        "looked_back": looked_back,
        "resumed": drained,
        "admitted": refill_all(tenant_id),
    }


def refill_all(tenant_id: str) -> int:
    """Start queued runs wherever their key has a free slot (the net behind the
    refill each settle does): a limit raised by a deploy, a refill lost."""
    with db.reading() as conn:
        keys = slots.keys_with_queued(conn, tenant_id)
    started = 0
    for key in keys:
        with db.transaction() as conn:
            started += len(slots.refill(conn, key))
    return started
