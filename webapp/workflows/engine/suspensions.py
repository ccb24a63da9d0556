"""Suspensions the run loop commits itself: a retry's backoff, a wait for
an event (with its look-back for an event that came first) and a wait for a
signal or an update (`store.messages` keeps the messages: the wait takes one
that came first at once). Their pending rows, written by the projection,
signal their own wake-up."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection

from webapp.core import clock, db
from webapp.workflows.definition import match as matchmod
from webapp.workflows.definition.durations import to_instant
from webapp.workflows.definition.messages import WaitForSignal, WaitForUpdate
from webapp.workflows.definition.model import Retry, RunContext, WaitForEvent, Workflow
from webapp.workflows.engine import heartbeat
from webapp.workflows.engine.stops import RunResult, storable
from webapp.workflows.interpreter import json_safe, resolve
from webapp.workflows.store import messages, pending, runs
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import NEVER

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
    after = max(int(ctx.trigger.position), int(ctx.results.get(ev.CONSUMED, 0)))
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
                ctx.step_index,
                event_type,
                expr,
                timeout_at.isoformat(),
                wf.name,
                row.fingerprint,
                after,
            ),
        )
        # Event before wait: the awaited event may have landed any time after
        # the trigger (or the event this run consumed last), before this wait's
        # row existed. Looked for here, for every event committed before; on
        # PostgreSQL again once this has committed, for one committed meanwhile
        # (`store.pending`). One committed later finds the row, inline or in
        # the wake-up projection's net (`triggers.wakeups`).
        wait = (ctx.tenant_id, ctx.run_id, ctx.step_index, event_type, after, expr)
        complete = db.is_sqlite(conn)
        woken = pending.look_back(conn, *wait, complete=complete)
    if not (woken or complete):
        pending.look_back_committed(*wait)
    return RunResult.SUSPENDED


def for_message(ctx: RunContext, step: WaitForSignal | WaitForUpdate, token: str) -> str | None:
    """A wait for a signal or an update: a message that came first is taken
    at once (None: the step's result is committed with the run's progress, the
    run goes on); else the run suspends until one comes or the timeout (its
    result then None). An update is judged by its handler outside any
    transaction; a rejected one is answered and the wait goes on."""
    if isinstance(step, WaitForSignal):
        return _take_signal(ctx, step, token)
    while True:
        with db.reading() as conn:
            msg = messages.next_update(conn, ctx.tenant_id, ctx.run_id, step.update)
        if msg is None:
            return _suspend_for_message(ctx, step, token)
        outcome, value = messages.judge(step.handler, ctx.results, msg.payload)
        with db.transaction() as conn:
            row = runs.owned(conn, ctx.tenant_id, ctx.run_id, token)
            if row is None:
                return RunResult.LOST
            answered = messages.answer(conn, row, msg, outcome, value, ctx.step_index)
            if answered and outcome == messages.ACCEPTED:
                _went_on(conn, row, ctx, step.name, value)
                return None


def _take_signal(ctx: RunContext, step: WaitForSignal, token: str) -> str | None:
    with db.transaction() as conn:
        row = runs.owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return RunResult.LOST
        found, payload = messages.take_signal(conn, row, step.signal, ctx.step_index)
        if found:
            _went_on(conn, row, ctx, step.name, payload)
            return None
    return _suspend_for_message(ctx, step, token)


def _went_on(conn: Connection, row: Any, ctx: RunContext, name: str, value: Any) -> None:
    ctx.results[name] = json_safe(value, name)
    runs.save(
        conn,
        row,
        results=ctx.results,
        step_index=ctx.step_index + 1,
        attempt=1,
        lease_until=heartbeat.lease_until(),
    )


def _suspend_for_message(
    ctx: RunContext, step: WaitForSignal | WaitForUpdate, token: str
) -> str | None:
    """Suspend at the wait, unless a message came meanwhile (then take the
    step again: the row lock orders this against every sender)."""
    timeout = resolve(step.timeout, ctx)
    timeout_at = NEVER if timeout is None else to_instant(timeout, clock.now())
    kind, name = (
        (messages.SIGNAL, step.signal)
        if isinstance(step, WaitForSignal)
        else (messages.UPDATE, step.update)
    )
    with db.transaction() as conn:
        row = runs.owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return RunResult.LOST
        if messages.waiting(conn, row, kind, name):
            came = True
        else:
            came = False
            runs.save(conn, row, results=storable(ctx.results))
            runs.append_run_event(
                conn,
                row,
                ev.STEP_WAITING_FOR_MESSAGE,
                {
                    "stepIndex": ctx.step_index,
                    "kind": kind,
                    "name": name,
                    "timeoutAt": timeout_at.isoformat(),
                    "workflowName": ctx.workflow_name,
                    "definitionFingerprint": row.fingerprint,
                },
            )
    if came:
        return for_message(ctx, step, token)
    return RunResult.SUSPENDED
