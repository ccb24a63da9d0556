"""Running a claimed run until it suspends, completes or fails.

A run is executed by whoever holds its lease (`workflow_runs.lease_token`).
After every top-level step its progress (next step, results) commits in its own
transaction, so a worker killed mid-run loses only the step in flight: the sweep
re-dispatches the run once the lease has expired and it continues from the last
committed step. Steps that touch the database (append_event, call) commit their
effect together with their progress: exactly once. Steps with outside effects
(mail, webhook) are at least once: only a step in flight at a crash can repeat.

One saving keeps that promise: a pure step (compute, or a branch / for-each of
pure steps) directly followed by the end of the run, a `return` or a `wait`
commits together with that stop, since nothing with an effect runs between
them. A run whose continuation is no more than that (the usual shape after a
wait) is finished without any intermediate commit, and the drain finishes a
whole batch of such runs in one transaction (`finish_many`).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import current_app, has_app_context
from sqlalchemy import Connection, select, update

from webapp import clock, db
from webapp.eventstore import (
    Event,
    NewEvent,
    StreamId,
    VersionConflict,
    append,
    append_many,
    get_event,
    read_all,
)
from webapp.jobs import enqueue
from webapp.workflows import api, pending, registry
from webapp.workflows import events as ev
from webapp.workflows import match as matchmod
from webapp.workflows.tables import workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

LEASE = timedelta(minutes=5)
RESUME_FUNC = "worker.workflow_tasks.resume_run"
ADVANCE_FUNC = "worker.workflow_tasks.advance"
CONSUMED = "$consumed"  # results key: position of the last awaited event this run used


@dataclass
class RunContext:
    """What a step's functions see: the trigger event, results so far, the attempt."""

    tenant_id: str
    run_id: str
    workflow_name: str
    trigger: Event
    results: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    step_index: int = 0

    def __getitem__(self, name: str) -> Any:
        return self.results[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.results.get(name, default)


@dataclass
class RunState:
    """What the claim (or advance) already knows about a run it leased, so the
    continuation need not read it again."""

    tenant_id: str
    run_id: str
    token: str
    wf: api.Workflow
    trigger: Event
    step_index: int
    attempt: int
    results: dict[str, Any]
    fingerprint: str

    @classmethod
    def leased(cls, row: Any, token: str, wf: api.Workflow, trigger: Event) -> RunState:
        """The state of a `workflow_runs` row whose lease `token` we just took."""
        return cls(
            row.tenant_id,
            row.run_id,
            token,
            wf,
            trigger,
            row.step_index,
            row.attempt,
            dict(row.results),
            row.fingerprint,
        )


@dataclass
class Outcome:
    """How a run stops: the run event to append and the runs columns its
    projection does not set (results, step)."""

    run_id: str
    token: str
    status: str  # completed | failed | suspended
    event: NewEvent
    values: dict[str, Any]
    step_index: int = 0
    wake_at: datetime | None = None


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class WebhookError(Exception):
    """The webhook answered with an error status or could not be reached."""


def resolve(value: Any, ctx: RunContext) -> Any:
    return value(ctx) if callable(value) and not isinstance(value, type) else value


def stream(tenant_id: str, run_id: str) -> StreamId:
    return StreamId(tenant_id, ev.AGGREGATE_TYPE, run_id)


def lock_run(conn: Connection, tenant_id: str, run_id: str) -> Any:
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id
    )
    if not db.is_sqlite(conn):
        q = q.with_for_update()
    return conn.execute(q).first()


def append_run_event(conn: Connection, row: Any, type_: str, payload: dict[str, Any]) -> Event:
    """Append to the run's stream at the version the (locked) runs row says."""
    return append(conn, stream(row.tenant_id, row.run_id), [NewEvent(type_, payload)], row.version)[
        0
    ]


def append_batch(
    conn: Connection,
    batch: list[tuple[StreamId, list[NewEvent], int]],
    extra: dict[tuple[str, str], dict[str, Any]] | None = None,
) -> None:
    """Append run events to many run streams (each at its expected version) and
    apply their projections set-based, plus `extra` runs columns per run."""
    if not batch:
        return
    with pending.batched(conn) as collected:
        if len(batch) == 1:
            append(conn, *batch[0])  # one round trip fewer than append_many
        else:
            append_many(conn, batch)
    pending.flush(conn, collected, extra)


def schedule_resume(
    conn: Connection, tenant_id: str, run_id: str, step_index: int, wake_at: datetime
) -> None:
    """After commit: enqueue the resume now, or at wake_at with rq-scheduler.
    The minute sweep stays the safety net when Redis loses it."""
    due_now = wake_at <= clock.now()

    def go() -> None:
        if due_now:
            enqueue(RESUME_FUNC, tenant_id, run_id, step_index)
        else:
            enqueue(RESUME_FUNC, tenant_id, run_id, step_index, at=wake_at)

    if has_app_context():
        db.after_commit(conn, go)


def schedule_advance(conn: Connection, tenant_id: str, run_id: str) -> None:
    if has_app_context():
        db.after_commit(conn, lambda: _enqueue_quietly(ADVANCE_FUNC, tenant_id, run_id))


def _enqueue_quietly(func: str, *args: Any) -> None:
    enqueue(func, *args)


def _json_safe(value: Any, step_name: str) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise TypeError(f"result of step {step_name!r} is not JSON-serialisable") from None
    return value


def _public(results: dict[str, Any]) -> dict[str, Any]:
    return results


# -- step execution ----------------------------------------------------------------


def run_steps(steps: tuple[api.Step, ...], ctx: RunContext, conn: Connection | None = None) -> Any:
    """Run inner (non-suspending) steps in order; the last result is returned."""
    result = None
    for s in steps:
        result = run_step(s, ctx, conn)
        ctx.results[s.name] = _json_safe(result, s.name)
    return result


def run_step(step: api.Step, ctx: RunContext, conn: Connection | None = None) -> Any:
    if isinstance(step, api.Compute):
        return step.fn(ctx)
    if isinstance(step, api.Return):
        raise _Return(_json_safe(resolve(step.value, ctx), step.name))
    if isinstance(step, api.Branch):
        chosen = step.then if resolve(step.condition, ctx) else step.otherwise
        return run_steps(chosen, ctx, conn)
    if isinstance(step, api.ForEach):
        items = list(resolve(step.over, ctx) or [])
        out = []
        try:
            for item in items:
                ctx.results[step.as_] = _json_safe(item, step.as_)
                out.append(run_steps(step.do, ctx, conn))
        finally:
            ctx.results.pop(step.as_, None)
        return out
    if isinstance(step, api.SendMail):
        from webapp import mail

        mail.send(  # type: ignore[attr-defined]
            str(resolve(step.to, ctx)),
            str(resolve(step.subject, ctx)),
            str(resolve(step.body, ctx)),
        )
        return {"sent": True}
    if isinstance(step, api.SendWebhook):
        return _send_webhook(step, ctx)
    if isinstance(step, api.AppendEvent | api.Call):
        if conn is None:
            with db.transaction() as own:
                return _db_step(step, ctx, own)
        return _db_step(step, ctx, conn)
    raise TypeError(f"step {step.name!r} ({type(step).__name__}) cannot run here")


def _db_step(step: api.AppendEvent | api.Call, ctx: RunContext, conn: Connection) -> Any:
    if isinstance(step, api.AppendEvent):
        from webapp.eventstore import ANY, Metadata

        payload = resolve(step.payload, ctx) or {}
        e = append(
            conn,
            StreamId(
                ctx.tenant_id,
                str(resolve(step.aggregate_type, ctx)),
                str(resolve(step.aggregate_id, ctx)),
            ),
            [NewEvent(step.event_type, payload)],
            ANY,
            Metadata(actor=f"workflow:{ctx.workflow_name}", correlation_id=ctx.run_id),
        )[0]
        return e.ref
    handler = registry.get_handler(step.handler)
    return handler(conn, ctx, resolve(step.payload, ctx))


def _secret(name: str) -> str:
    secrets = current_app.config["APP_CONFIG"].secrets if has_app_context() else {}
    value = secrets.get(name.lower())
    if not value:
        raise LookupError(f"secret {name!r} is not configured (env SECRET_{name.upper()})")
    return str(value)


def _send_webhook(step: api.SendWebhook, ctx: RunContext) -> Any:
    url = str(resolve(step.url, ctx))
    headers = {str(k): str(v) for k, v in (resolve(step.headers, ctx) or {}).items()}
    body = resolve(step.body, ctx)
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        headers.setdefault("Content-Type", "application/json")
    if step.auth is not None:
        if "bearer" in step.auth:
            headers["Authorization"] = f"Bearer {_secret(step.auth['bearer'])}"
        else:
            headers[step.auth["header"]] = _secret(step.auth["secret"])
    last: Exception | None = None
    for attempt in range(step.retry + 1):
        if attempt:
            time.sleep(step.retry_delay * attempt)
        req = urllib.request.Request(url, data=data, headers=headers, method=step.method)
        try:
            with urllib.request.urlopen(req, timeout=step.timeout) as resp:  # noqa: S310
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                raise WebhookError(f"webhook answered {exc.code}") from None
            last = WebhookError(f"webhook answered {exc.code}")
            continue
        except (urllib.error.URLError, OSError) as exc:
            last = WebhookError(f"webhook unreachable: {type(exc).__name__}")
            continue
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return {"status": status, "body": parsed}
    assert last is not None
    raise last


# -- the run loop ----------------------------------------------------------------


def _owned(conn: Connection, tenant_id: str, run_id: str, token: str) -> Any:
    row = lock_run(conn, tenant_id, run_id)
    if row is None or row.status != "running" or row.lease_token != token:
        return None
    return row


def _save(conn: Connection, row: Any, **values: Any) -> None:
    conn.execute(
        update(workflow_runs)
        .where(workflow_runs.c.tenant_id == row.tenant_id, workflow_runs.c.run_id == row.run_id)
        .values(updated_at=clock.now(), **values)
    )


def _save_owned(conn: Connection, tenant_id: str, run_id: str, token: str, **values: Any) -> bool:
    """Commit progress if we still hold the lease: one statement, no read."""
    done = conn.execute(
        update(workflow_runs)
        .where(
            workflow_runs.c.tenant_id == tenant_id,
            workflow_runs.c.run_id == run_id,
            workflow_runs.c.status == "running",
            workflow_runs.c.lease_token == token,
        )
        .values(updated_at=clock.now(), **values)
    ).rowcount
    return bool(done)


def is_pure(step: api.Step) -> bool:
    """No effect outside the run: compute, return, and branch / for-each of those."""
    if isinstance(step, api.Compute | api.Return):
        return True
    if isinstance(step, api.Branch):
        return all(is_pure(s) for s in (*step.then, *step.otherwise))
    if isinstance(step, api.ForEach):
        return all(is_pure(s) for s in step.do)
    return False


def _folds(steps: tuple[api.Step, ...], i: int) -> bool:
    """Step i needs no progress commit of its own: it is pure and what follows
    is the end, a return or a wait (they commit its result with them)."""
    return is_pure(steps[i]) and (
        i + 1 == len(steps) or isinstance(steps[i + 1], api.Return | api.Wait)
    )


def quick(state: RunState) -> bool:
    """Whether the run's continuation reaches its next stop without a commit in
    between (so a batch can finish it in memory and commit it with others)."""
    steps, i = state.wf.steps, state.step_index
    return i >= len(steps) or isinstance(steps[i], api.Return | api.Wait) or _folds(steps, i)


def load_state(tenant_id: str, run_id: str, token: str) -> RunState | None:
    with db.reading() as conn:
        row = conn.execute(
            select(workflow_runs).where(
                workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id
            )
        ).first()
        if row is None or row.lease_token != token or row.status != "running":
            return None
        trigger = (
            get_event(conn, row.trigger_event_ref["eventId"]) if row.trigger_event_ref else None
        )
    wf = registry.get(row.workflow_name)
    if wf is None or trigger is None:
        return None  # checked by the claim; only a concurrent unregister gets here
    return RunState.leased(row, token, wf, trigger)


def execute(tenant_id: str, run_id: str, token: str, state: RunState | None = None) -> str:
    """Run a run whose lease we hold, from its recorded step, until it suspends
    or ends. Returns suspended | completed | failed | lost (lease gone, e.g. cancelled).
    `state` is what the claim already read (else it is read here)."""
    if state is None:
        state = load_state(tenant_id, run_id, token)
        if state is None:
            return "lost"
    r = run(state)
    if isinstance(r, Outcome):
        return finish_many(tenant_id, [r])[run_id]
    return r


def run(state: RunState) -> str | Outcome:
    """Run steps from the state's step. A stop that is a plain run event (wait,
    completion, failure) comes back as an Outcome for the caller to commit; the
    other stops (wait-for-event, retry, a db step that ends the run) commit here."""
    tenant_id, run_id, token, wf = state.tenant_id, state.run_id, state.token, state.wf
    ctx = RunContext(
        tenant_id,
        run_id,
        wf.name,
        state.trigger,
        dict(state.results),
        state.attempt,
        state.step_index,
    )
    i = state.step_index
    n = len(wf.steps)
    while i < n:
        step = wf.steps[i]
        ctx.step_index = i
        try:
            if isinstance(step, api.Wait):
                return _wait_outcome(ctx, step, token, state.fingerprint)
            if isinstance(step, api.WaitForEvent):
                return _suspend_for_event(ctx, wf, step, token)
            if isinstance(step, api.Retry):
                try:
                    result = run_steps(step.do, ctx)
                except _Return:
                    raise
                except Exception as exc:
                    if ctx.attempt < step.times:
                        return _schedule_retry(ctx, step, exc, token)
                    raise
            elif step.uses_db:
                with db.transaction() as conn:
                    row = _owned(conn, tenant_id, run_id, token)
                    if row is None:
                        return "lost"
                    result = _json_safe(run_step(step, ctx, conn), step.name)
                    ctx.results[step.name] = result
                    if i + 1 == n:
                        _save(conn, row, results=ctx.results, step_index=n, attempt=1)
                        append_run_event(conn, row, ev.RUN_COMPLETED, ev.run_completed(wf.name, n))
                        return "completed"
                    _save(
                        conn,
                        row,
                        results=ctx.results,
                        step_index=i + 1,
                        attempt=1,
                        lease_until=clock.now() + LEASE,
                    )
                i += 1
                ctx.attempt = 1
                continue
            else:
                result = run_step(step, ctx)
            ctx.results[step.name] = _json_safe(result, step.name)
        except _Return as r:
            ctx.results["return"] = r.value
            return _complete_outcome(ctx, wf, token)
        except Exception as exc:
            return _fail_outcome(ctx, wf, exc, token)
        ctx.attempt = 1
        if i + 1 == n:
            break
        if not _folds(wf.steps, i):
            with db.transaction() as conn:
                if not _save_owned(
                    conn,
                    tenant_id,
                    run_id,
                    token,
                    results=ctx.results,
                    step_index=i + 1,
                    attempt=1,
                    lease_until=clock.now() + LEASE,
                ):
                    return "lost"
        i += 1
    return _complete_outcome(ctx, wf, token)


def finish_many(tenant_id: str, outcomes: list[Outcome]) -> dict[str, str]:
    """Commit the stops of many leased runs of one tenant in one transaction:
    their run events in one append, their projections set-based. A run whose
    lease is gone (cancelled, taken over) is left alone: "lost"."""
    if not outcomes:
        return {}
    try:
        return _finish(tenant_id, outcomes)
    except VersionConflict:
        # Every writer of a run stream holds its runs row, which we lock, so this
        # should not happen; settle the batch run by run so one cannot sink all.
        if len(outcomes) == 1:
            log.warning("workflow run lost its stream", extra={"run_id": outcomes[0].run_id})
            return {outcomes[0].run_id: "lost"}
        out: dict[str, str] = {}
        for o in outcomes:
            out.update(finish_many(tenant_id, [o]))
        return out


def _finish(tenant_id: str, outcomes: list[Outcome]) -> dict[str, str]:
    out: dict[str, str] = {}
    with db.transaction() as conn:
        q = select(
            workflow_runs.c.run_id,
            workflow_runs.c.status,
            workflow_runs.c.lease_token,
            workflow_runs.c.version,
        ).where(
            workflow_runs.c.tenant_id == tenant_id,
            workflow_runs.c.run_id.in_(sorted({o.run_id for o in outcomes})),
        )
        if not db.is_sqlite(conn):
            q = q.order_by(workflow_runs.c.run_id).with_for_update()
        rows = {r.run_id: r for r in conn.execute(q)}
        batch: list[tuple[StreamId, list[NewEvent], int]] = []
        extra: dict[tuple[str, str], dict[str, Any]] = {}
        for o in outcomes:
            row = rows.get(o.run_id)
            if row is None or row.status != "running" or row.lease_token != o.token:
                out[o.run_id] = "lost"
                continue
            batch.append((stream(tenant_id, o.run_id), [o.event], row.version))
            extra[(tenant_id, o.run_id)] = o.values
            out[o.run_id] = o.status
            if o.wake_at is not None:
                schedule_resume(conn, tenant_id, o.run_id, o.step_index, o.wake_at)
        append_batch(conn, batch, extra)
    return out


def _complete_outcome(ctx: RunContext, wf: api.Workflow, token: str) -> Outcome:
    n = len(wf.steps)
    return Outcome(
        ctx.run_id,
        token,
        "completed",
        NewEvent(ev.RUN_COMPLETED, ev.run_completed(wf.name, n)),
        dict(results=ctx.results, step_index=n, attempt=1),
    )


def _fail_outcome(ctx: RunContext, wf: api.Workflow, exc: BaseException, token: str) -> Outcome:
    # The raw error may hold personal data: the log gets it, the event does not.
    log.warning(
        "workflow step failed",
        extra={"workflow": wf.name, "run_id": ctx.run_id, "step_index": ctx.step_index},
        exc_info=exc,
    )
    return Outcome(
        ctx.run_id,
        token,
        "failed",
        NewEvent(ev.RUN_FAILED, ev.run_failed(wf.name, ctx.step_index, ev.step_error(exc))),
        dict(results=_storable(ctx.results)),
    )


def _storable(results: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in results.items():
        try:
            json.dumps(v)
            out[k] = v
        except (TypeError, ValueError):
            continue
    return out


def _wait_outcome(ctx: RunContext, step: api.Wait, token: str, fingerprint: str) -> Outcome:
    wake_at = api.to_instant(resolve(step.duration, ctx), clock.now())
    return Outcome(
        ctx.run_id,
        token,
        "suspended",
        NewEvent(
            ev.STEP_WAITING,
            ev.step_waiting(ctx.step_index, wake_at.isoformat(), ctx.workflow_name, fingerprint),
        ),
        dict(results=ctx.results),
        step_index=ctx.step_index,
        wake_at=wake_at,
    )


def _schedule_retry(ctx: RunContext, step: api.Retry, exc: Exception, token: str) -> str:
    log.info(
        "workflow retry scheduled",
        extra={"workflow": ctx.workflow_name, "run_id": ctx.run_id, "attempt": ctx.attempt},
        exc_info=exc,
    )
    wake_at = clock.now() + step.delay(ctx.attempt)
    with db.transaction() as conn:
        row = _owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return "lost"
        _save(conn, row, results=_storable(ctx.results))
        append_run_event(
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
        schedule_resume(conn, ctx.tenant_id, ctx.run_id, ctx.step_index, wake_at)
    return "suspended"


def _suspend_for_event(
    ctx: RunContext, wf: api.Workflow, step: api.WaitForEvent, token: str
) -> str:
    event_type = wf.awaits[step.event]
    node = resolve(step.match, ctx)
    expr = matchmod.persist(node) if node is not None else None
    timeout_at = api.to_instant(resolve(step.timeout, ctx), clock.now())
    with db.transaction() as conn:
        row = _owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return "lost"
        _save(conn, row, results=ctx.results)
        append_run_event(
            conn,
            row,
            ev.STEP_WAITING_FOR_EVENT,
            ev.step_waiting_for_event(
                ctx.step_index, event_type, expr, timeout_at.isoformat(), wf.name, row.fingerprint
            ),
        )
        # Event before wait: the awaited event may have landed after the run
        # started but before this wait was registered. This scan runs after our
        # append (which serialises with every other append), so an event is
        # either visible here or comes after us and the wake-up projection sees
        # our row.
        after = max(int(row.started_position), int(ctx.results.get(CONSUMED, 0)))
        found = lookback(conn, ctx.tenant_id, event_type, after, expr)
        if found is not None:
            wake(conn, ctx.tenant_id, ctx.run_id, ctx.step_index, found)
            schedule_resume(conn, ctx.tenant_id, ctx.run_id, ctx.step_index, clock.now())
        else:
            schedule_resume(conn, ctx.tenant_id, ctx.run_id, ctx.step_index, timeout_at)
    return "suspended"


def lookback(
    conn: Connection, tenant_id: str, event_type: str, after: int, expr: Any
) -> Event | None:
    while True:
        batch = read_all(conn, after, [event_type], limit=500, tenant_id=tenant_id)
        for e in batch:
            try:
                if matchmod.evaluate(expr, e.payload):
                    return e
            except matchmod.MatchError:
                return None
        if len(batch) < 500:
            return None
        after = batch[-1].position


def wake(conn: Connection, tenant_id: str, run_id: str, step_index: int, e: Event) -> None:
    conn.execute(
        update(workflow_run_pending)
        .where(
            workflow_run_pending.c.tenant_id == tenant_id,
            workflow_run_pending.c.run_id == run_id,
            workflow_run_pending.c.step_index == step_index,
        )
        .values(
            trigger_event_type=e.type,
            trigger_event_ref=e.ref,
            wake_at=clock.now(),
        )
    )


def new_token() -> str:
    return str(uuid.uuid4())
