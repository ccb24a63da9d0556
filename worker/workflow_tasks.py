"""Workflow jobs the RQ worker runs (enqueued by dotted path)."""

from __future__ import annotations

import time

from webapp import clock
from webapp.workflows.dispatch.drain import drain as drain_due
from webapp.workflows.engine import resume
from worker.tasks import in_app

# rq-scheduler stores whole seconds, so a timed job can fire up to a second
# early; a resume that early waits out the remainder instead of missing its slot.
EARLY_SLACK_S = 2.0


@in_app
def resume_run(tenant_id: str, run_id: str, step_index: int) -> str:
    tenant_id, run_id, step_index = resume.validate_request(tenant_id, run_id, step_index)
    wake_at = resume.pending_wake_at(tenant_id, run_id, step_index)
    if wake_at is None:
        return resume.ALREADY
    early = (wake_at - clock.now()).total_seconds()
    if early > EARLY_SLACK_S:
        return "not-due"  # the minute sweep or a later enqueue takes it
    if early > 0:
        time.sleep(early)
    return resume.resume_run(tenant_id, run_id, step_index)


@in_app
def advance(tenant_id: str, run_id: str) -> str:
    return resume.advance(tenant_id, run_id)


@in_app
def drain(tenant_id: str) -> int:
    return drain_due(tenant_id)


@in_app
def advance_many(tenant_id: str, run_ids: list[str]) -> dict[str, str]:
    return resume.advance_many(tenant_id, run_ids)


@in_app
def continue_run(tenant_id: str, run_id: str, token: str) -> str:
    """The resume loop's hand-off: run on under the lease its claim took."""
    return resume.continue_leased(tenant_id, run_id, token)
