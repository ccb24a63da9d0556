"""The run loop: run a leased run from its recorded step until it suspends,
completes or fails.

After every top-level step its progress (next step, results) commits, so a
worker killed mid-run loses only the step in flight: once its lease expires
the run continues from the last committed step. A step that writes to the
database (append_event, call, or a retry / branch / for_each holding one) runs
inside the transaction that commits its progress: its writes happen exactly
once, and a failed attempt of a retry rolls them back. Steps with outside
effects (mail, webhook) are at least once: only a step in flight at a crash can
repeat.

Two savings keep that promise. A pure step (compute, or a branch / for-each of
pure steps) directly followed by the end of the run, a `return` or a `wait`
commits together with that stop, since nothing with an effect runs between
them. A run whose continuation is no more than that (the usual shape after a
wait) is finished without any intermediate commit, and the drain finishes a
whole batch of such runs in one transaction (`stops.finish_many`). And such a
continuation can run before its run is even taken (`stretch`): the claim or
the lease then commits it in its own transaction (`resume`).

An infrastructure error (`transient`) never fails the run: the loop waits, reloads
the run's committed state and carries on.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from webapp.core import clock, db
from webapp.eventstore import NewEvent, get_event
from webapp.workflows.definition import catalog
from webapp.workflows.definition.messages import WaitForSignal, WaitForUpdate
from webapp.workflows.definition.model import (
    Retry,
    Return,
    RunContext,
    RunWorkflow,
    Step,
    Wait,
    WaitForEvent,
    Workflow,
    child_step,
)
from webapp.workflows.engine import children, heartbeat, stops, suspensions, transient
from webapp.workflows.engine.stops import RunResult, RunState, Stop
from webapp.workflows.interpreter import (
    ReturnSignal,
    is_pure,
    json_safe,
    needs_transaction,
    run_step,
    run_steps,
)
from webapp.workflows.store import batches, progress, runs
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus

log = logging.getLogger("webapp.workflows")


def _folds(steps: tuple[Step, ...], i: int) -> bool:
    """Step i needs no progress commit of its own: it is pure and what follows
    is the end, a return or a wait (they commit its result with them)."""
    return is_pure(steps[i]) and (i + 1 == len(steps) or isinstance(steps[i + 1], Return | Wait))


def _quick_from(steps: tuple[Step, ...], i: int) -> bool:
    return i >= len(steps) or isinstance(steps[i], Return | Wait) or _folds(steps, i)


def quick(state: RunState) -> bool:
    """Whether the run's continuation reaches its next stop without a commit in
    between (so a batch can finish it in memory and commit it with others)."""
    return _quick_from(state.wf.steps, state.step_index)


def quick_at(wf: Workflow, step_index: int) -> bool:
    """`quick` for a run of `wf` standing at `step_index`."""
    return _quick_from(wf.steps, step_index)


def stretch(state: RunState) -> Stop | None:
    """A quick continuation run in memory, ahead of its commit: the Stop it
    reaches (completed, failed, or a wait), for the transaction that takes
    the run to commit with it (`resume`, "settle ahead"). None when the
    run is not quick, or when something failed that a retry must see (an
    infrastructure error): the run then goes the usual way."""
    if not quick(state):
        return None
    try:
        r = _run(state)
    except Exception:  # only an infrastructure error gets out of _run
        return None
    return r if isinstance(r, Stop) else None


def stops_next(state: RunState) -> bool:
    """Whether the run's next step is a suspension that commits by itself and
    runs no user code first (a wait for an event, starting a child): cheap to
    run where it was claimed, not worth a hand-off to another job."""
    i = state.step_index
    if i >= len(state.wf.steps):
        return False
    step = state.wf.steps[i]
    return isinstance(step, WaitForEvent) or (
        isinstance(step, RunWorkflow) and not callable(step.input)
    )


def load_state(tenant_id: str, run_id: str, token: str) -> RunState | None:
    with db.reading() as conn:
        row = runs.read_run(conn, tenant_id, run_id)
        if row is None or row.lease_token != token or row.status != RunStatus.RUNNING:
            return None
        trigger = (
            get_event(conn, row.trigger_event_ref["eventId"]) if row.trigger_event_ref else None
        )
    wf = catalog.get(row.workflow_name, row.definition_version)
    if wf is None or trigger is None or wf.fingerprint != row.fingerprint:
        return None  # checked by the claim; only a concurrent (un)register gets here
    return RunState.leased(row, token, wf, trigger)


def execute(tenant_id: str, run_id: str, token: str, state: RunState | None = None) -> str:
    """Run a run whose lease we hold, from its recorded step, until it suspends
    or ends. Returns suspended | completed | failed | lost (lease gone, e.g.
    cancelled, or an outage outlasted the engine's patience: the lease expires
    and the sweep carries on). `state` is what the claim already read."""

    def attempt(current: RunState) -> str:
        r = _run(current)
        if isinstance(r, Stop):
            return stops.finish_many(tenant_id, [r])[run_id]
        return r

    return _retrying(tenant_id, run_id, token, state, attempt)


def run(state: RunState) -> str | Stop:
    """Run steps from the state's step. A stop that is a plain run event (wait,
    completion, failure) comes back as a Stop for the caller to commit; the
    other stops (wait-for-event, retry, a db step that ends the run) commit here."""
    return _retrying(state.tenant_id, state.run_id, state.token, state, _run)


def _retrying(tenant_id: str, run_id: str, token: str, state: RunState | None, fn: Any) -> Any:
    """`fn(state)`; on an infrastructure error wait (backoff), reload the run's
    committed state and call again. "lost" when the lease is gone meanwhile or
    the outage outlasts `transient.BUDGET_S` (the lease then expires, the sweep
    re-dispatches the run)."""
    current = state
    try:
        with heartbeat.heartbeat(tenant_id, [(run_id, token)]):
            return _attempts(tenant_id, run_id, token, current, fn)
    except Exception as exc:
        if not transient.is_infrastructure(exc):
            raise
        log.warning("workflow run left to its lease after an outage", extra={"run_id": run_id})
    return RunResult.LOST


def _attempts(tenant_id: str, run_id: str, token: str, current: RunState | None, fn: Any) -> Any:
    for attempt in transient.retrying():
        with attempt:
            if current is None or attempt.retry_state.attempt_number > 1:
                current = load_state(tenant_id, run_id, token)
                if current is None:
                    return RunResult.LOST
            return fn(current)
    return RunResult.LOST  # pragma: no cover - tenacity re-raises when it gives up


def _run(state: RunState) -> str | Stop:
    wf, token = state.wf, state.token
    ctx = RunContext(
        state.tenant_id,
        state.run_id,
        wf.name,
        state.trigger,
        dict(state.results),
        state.attempt,
        state.step_index,
        emitter=functools.partial(progress.emit, state.tenant_id, state.run_id, token),
        batch=batches.trigger_batch(state.tenant_id, state.run_id) if wf.batch is not None else (),
    )
    i, n = state.step_index, len(wf.steps)
    carry: list[NewEvent] = []  # events of passed waits, committed with the next stop
    while i < n:
        step = wf.steps[i]
        ctx.step_index = i
        try:
            if isinstance(step, Wait):
                at = stops.wake_at(ctx, step)
                if at <= clock.now() and _quick_from(wf.steps, i + 1):
                    carry += stops.passed_wait(ctx, at, state.fingerprint)
                    ctx.results[step.name] = None
                    i += 1
                    continue
                return stops.waiting(ctx, step, token, state.fingerprint, at, carry)
            if isinstance(step, WaitForEvent):
                return suspensions.for_event(ctx, wf, step, token)
            if isinstance(step, WaitForSignal | WaitForUpdate):  # commits its own progress
                stopped = suspensions.for_message(ctx, step, token)
                if stopped is not None:
                    return stopped
                i += 1
                continue
            if child_step(step) is not None:  # run_workflow (maybe inside a retry)
                children.raise_if_failed(ctx)
                started = children.start(ctx, step, token)
                if started is not None:
                    return started
                i += 1
                ctx.attempt = 1
                continue
            if needs_transaction(step):
                done = _in_transaction(ctx, state, step, i + 1 == n)
                if done is not None:
                    return done
                i += 1
                ctx.attempt = 1
                continue
            inner = step.do if isinstance(step, Retry) else (step,)
            ctx.results[step.name] = json_safe(run_steps(inner, ctx), step.name)
        except ReturnSignal as r:
            ctx.results["return"] = r.value
            return stops.completed(ctx, wf, token, carry)
        except Exception as exc:
            if transient.is_infrastructure(exc) or isinstance(exc, progress.NotLeased):
                raise  # NotLeased: an emit ahead of the lease; `stretch` gives up
            if isinstance(step, Retry) and ctx.attempt < step.times:
                return suspensions.for_retry(ctx, step, exc, token)
            return stops.failed(ctx, wf, exc, token, carry)
        ctx.attempt = 1
        if i + 1 == n:
            break
        if not _folds(wf.steps, i):
            with db.transaction() as conn:
                if not runs.save_owned(
                    conn,
                    state.tenant_id,
                    state.run_id,
                    token,
                    results=ctx.results,
                    step_index=i + 1,
                    attempt=1,
                    lease_until=heartbeat.lease_until(),
                ):
                    return RunResult.LOST
        i += 1
    return stops.completed(ctx, wf, token, carry)


def _in_transaction(ctx: RunContext, state: RunState, step: Step, last: bool) -> str | None:
    """Run a step that writes to the database in the transaction that commits
    its progress. Returns "completed"/"lost" when the run stopped here, None to
    go on. The step's own errors roll its writes back and propagate."""
    n = len(state.wf.steps)
    emitter, ctx.emitter = ctx.emitter, progress.not_in_transaction  # it holds the run's row
    with db.transaction() as conn:
        row = runs.owned(conn, state.tenant_id, state.run_id, state.token)
        if row is None:
            return RunResult.LOST
        try:
            if isinstance(step, Retry):
                result: Any = run_steps(step.do, ctx, conn)
            else:
                result = run_step(step, ctx, conn)
            ctx.results[step.name] = json_safe(result, step.name)
        except ReturnSignal as r:
            ctx.results["return"] = r.value
            last = True
        finally:
            ctx.emitter = emitter
        if last:
            runs.save(conn, row, results=ctx.results, step_index=n, attempt=1)
            runs.append_run_event(conn, row, ev.RUN_COMPLETED, ev.run_completed(state.wf.name, n))
            return RunResult.COMPLETED
        runs.save(
            conn,
            row,
            results=ctx.results,
            step_index=ctx.step_index + 1,
            attempt=1,
            lease_until=heartbeat.lease_until(clock.now()),
        )
    return None
