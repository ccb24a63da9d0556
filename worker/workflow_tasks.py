"""Workflow jobs the RQ worker runs (their dotted paths: `webapp.workflows.dispatch.job_paths`).
Each wraps a plain function of the engine in an application context."""

from __future__ import annotations

import time

from webapp.core import clock, db
from webapp.core.redis_conn import get_redis
from webapp.workflows.dispatch import holders, inflight, signals
from webapp.workflows.dispatch.drain import drain as drain_due
from webapp.workflows.engine import resume
from webapp.workflows.engine.resume import ResumeResult
from webapp.workflows.store import queries
from worker.tasks import in_app

# rq-scheduler stores whole seconds, so a timed job can fire up to a second
# early; a resume that early waits out the remainder instead of missing its slot.
EARLY_SLACK_S = 2.0


@in_app
def resume_run(tenant_id: str, run_id: str, step_index: int) -> str:
    tenant_id, run_id, step_index = resume.validate_request(tenant_id, run_id, step_index)
    with db.reading() as conn:
        wake_at = queries.pending_wake_at(conn, tenant_id, run_id, step_index)
    if wake_at is None:
        return ResumeResult.ALREADY
    early = (wake_at - clock.now()).total_seconds()
    if early > EARLY_SLACK_S:
        return ResumeResult.NOT_DUE  # the minute sweep or a later signal takes it
    if early > 0:
        time.sleep(early)
    with inflight.tracked([signals.member(tenant_id, run_id, step_index)]):
        return resume.resume_run(tenant_id, run_id, step_index)


@in_app
def advance(tenant_id: str, run_id: str, holder: str | None = None) -> str:
    """Lease a running run nobody holds and run it on. With `holder` (the
    timer found that holder dead), its lease is taken over before it expires
    if this process still finds the holder dead and the lease still missed
    its renewals (both checked again here: the holder may have come back)."""
    dead = holders.confirmed_dead(get_redis(), holder) if holder is not None else frozenset()
    return resume.advance(tenant_id, run_id, dead)


@in_app
def drain(tenant_id: str) -> int:
    return drain_due(tenant_id)


@in_app
def advance_many(tenant_id: str, run_ids: list[str]) -> dict[str, str]:
    """Lease just-started runs and run them on (their continuations run ahead
    of the lease: kept in flight until it commits, should this worker die)."""
    members = [signals.member(tenant_id, r, signals.ADVANCE_STEP) for r in run_ids]
    with inflight.tracked(members):
        return resume.advance_many(tenant_id, run_ids)


@in_app
def continue_run(tenant_id: str, run_id: str, token: str) -> str:
    """The resume loop's hand-off: run on under the lease its claim took."""
    return resume.continue_leased(tenant_id, run_id, token)
