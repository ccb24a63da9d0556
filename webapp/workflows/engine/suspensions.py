"""Suspensions the run loop commits itself: a retry's backoff and a wait for
an event (with its look-back for an event that came first). Their pending
rows, written by the projection, signal their own wake-up."""

from __future__ import annotations

import logging

from webapp.core import clock, db
from webapp.workflows.definition import match as matchmod
from webapp.workflows.definition.context import RunContext
from webapp.workflows.definition.durations import to_instant
from webapp.workflows.definition.model import Retry, WaitForEvent, Workflow
from webapp.workflows.engine.run_state import RunResult
from webapp.workflows.engine.stops import storable
from webapp.workflows.interpreter import resolve
from webapp.workflows.store import pending, runs
from webapp.workflows.store import run_events as ev

log = logging.getLogger("webapp.workflows")


def for_retry(ctx: RunContext, step: Retry, exc: Exception, token: str) -> str:
    log.info(
        "workflow retry scheduled",
        extra={"workflow": ctx.workflow_name, "run_id": ctx.run_id, "attempt": ctx.attempt},
        exc_info=exc,
    )
    wake_at = clock.now() + step.delay(ctx.attempt)
    with db.transaction() as conn:
        row = runs.owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return RunResult.LOST
        runs.save(conn, row, results=storable(ctx.results))
        runs.append_run_event(
            conn,
            row,
            ev.RETRY_SCHEDULED,
            ev.retry_scheduled(
                ctx.step_index,
                ctx.attempt + 1,
                step.times,
                wake_at.isoformat(),
                ctx.workflow_name,
                ev.step_error(exc),
            ),
        )
    return RunResult.SUSPENDED


def for_event(ctx: RunContext, wf: Workflow, step: WaitForEvent, token: str) -> str:
    event_type = wf.awaits[step.event]
    node = resolve(step.match, ctx)
    expr = matchmod.persist(node) if node is not None else None
    timeout_at = to_instant(resolve(step.timeout, ctx), clock.now())
    with db.transaction() as conn:
        row = runs.owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return RunResult.LOST
        runs.save(conn, row, results=ctx.results)
        runs.append_run_event(
            conn,
            row,
            ev.STEP_WAITING_FOR_EVENT,
            ev.step_waiting_for_event(
                ctx.step_index, event_type, expr, timeout_at.isoformat(), wf.name, row.fingerprint
            ),
        )
    look_back(ctx, event_type, expr)
    return RunResult.SUSPENDED


def look_back(ctx: RunContext, event_type: str, expr: object) -> bool:
    """Event before wait: the awaited event may have landed any time after the
    trigger, before this wait's pending row existed. This scan runs after the
    suspension committed: an event committed before it is visible here, one
    committed after it finds the pending row inline or in the wake-up
    projection's net (`triggers.wakeups`). Scans from the trigger event (or the last awaited
    event this run consumed), not from run-started."""
    after = max(int(ctx.trigger.position), int(ctx.results.get(ev.CONSUMED, 0)))
    with db.reading() as conn:
        found = pending.lookback(conn, ctx.tenant_id, event_type, after, expr)
    if found is None:
        return False
    with db.transaction() as conn:
        return pending.wake(conn, ctx.tenant_id, ctx.run_id, ctx.step_index, found)
