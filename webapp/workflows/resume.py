"""resume-run (the seven rules, in order), the due-row drain and the sweep.

Claims are made in batches (`claim_batch`): the pending rows and their runs rows
are locked, rules 2-6 are decided in Python from those rows, and one append
writes every step.resumed (and any run-failed) with its run's expected version;
the projections of those events are applied set-based in the same transaction.
A single resume-run is a batch of one. The continuation (running the steps)
happens after that transaction commits, under the lease the claim took; runs
whose continuation needs no commit of its own are finished together
(`engine.finish_many`).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import DBAPIError

from webapp import clock, db
from webapp.eventstore import NewEvent, StreamId, VersionConflict, get_event, get_events
from webapp.redis_conn import get_redis
from webapp.workflows import api, engine, registry
from webapp.workflows import events as ev
from webapp.workflows.tables import workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

BATCH = 100
DRAIN_FUNC = "worker.workflow_tasks.drain"

ALREADY = "already-resumed"
RESUMED = "resumed"
FAILED = "failed"

# PostgreSQL deadlock / serialization failure: the batch is simply tried again.
_RETRYABLE = ("40P01", "40001")


@dataclass(frozen=True)
class Claim:
    outcome: str  # resumed | already-resumed | failed
    token: str | None = None
    reason: str | None = None
    state: engine.RunState | None = None


def validate(run_id: Any, step_index: Any) -> tuple[str, int]:
    """Rule 1: runId is a UUID, stepIndex an integer >= 0."""
    try:
        rid = str(uuid.UUID(str(run_id)))
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"resume-run: runId must be a UUID, got {run_id!r}") from None
    if isinstance(step_index, bool) or not isinstance(step_index, int) or step_index < 0:
        raise ValueError(f"resume-run: stepIndex must be an integer >= 0, got {step_index!r}")
    return rid, step_index


def settled(row: Any, pending: Any) -> bool:
    """Rule 3: completed, failed, cancelled, or already resumed at this step and attempt.

    Answered from the run's `workflow_runs` row, which the run events maintain
    inline (same transaction as the stream, and its `version` is the stream's),
    so it says exactly what replaying the current run's stream would: the run
    is still waiting at this suspension only while the row is `suspended` at
    this step (and, for a retry, at this attempt). Anything else (settled, or
    running because a step.resumed landed) is settled for this resume."""
    if row.status != "suspended" or row.step_index != pending.step_index:
        return True
    return bool(
        pending.suspension_event_type == ev.RETRY_SCHEDULED and row.attempt != pending.retry_attempt
    )


def _lock_keys(conn: Connection, tenant_id: str, keys: list[tuple[str, int]]) -> list[Any]:
    """(pending, runs row) for the given (run, step) keys, locked (PostgreSQL):
    the runs rows first, as every other writer of a run does."""
    run_ids = sorted({rid for rid, _ in keys})
    rq = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id.in_(run_ids)
    )
    pq = select(workflow_run_pending).where(
        workflow_run_pending.c.tenant_id == tenant_id,
        workflow_run_pending.c.run_id.in_(run_ids),
    )
    if not db.is_sqlite(conn):
        rq = rq.order_by(workflow_runs.c.run_id).with_for_update()
        pq = pq.order_by(workflow_run_pending.c.run_id).with_for_update()
    rows = {r.run_id: r for r in conn.execute(rq)}
    wanted = set(keys)
    return [(p, rows.get(p.run_id)) for p in conn.execute(pq) if (p.run_id, p.step_index) in wanted]


def _lock_due(conn: Connection, tenant_id: str, limit: int) -> tuple[int, list[Any]]:
    """Up to `limit` due rows, oldest first, with their runs rows. On PostgreSQL
    both are taken FOR UPDATE SKIP LOCKED, so parallel drains take disjoint rows
    and a drain never waits for a row lock (only, at the end, for the append
    lock). Should a runs row be busy (a cancel, a trigger), the due rows are
    given back and only the runs we hold are locked again, so we never keep a
    pending row whose runs row another transaction holds (which could deadlock
    with its inline delete of that pending row).
    Returns (rows found, pairs)."""
    q = (
        select(workflow_run_pending)
        .where(
            workflow_run_pending.c.tenant_id == tenant_id,
            workflow_run_pending.c.wake_at < clock.now(),
        )
        .order_by(workflow_run_pending.c.wake_at)
        .limit(limit)
    )
    sqlite = db.is_sqlite(conn)
    if sqlite:
        pend = list(conn.execute(q))
        rows = _runs(conn, tenant_id, {p.run_id for p in pend}, lock=False)
        return len(pend), [(p, rows.get(p.run_id)) for p in pend]
    sp = conn.begin_nested()
    pend = list(conn.execute(q.with_for_update(skip_locked=True)))
    rows = _runs(conn, tenant_id, {p.run_id for p in pend}, lock=True)
    if all(p.run_id in rows for p in pend):
        sp.commit()
        return len(pend), [(p, rows[p.run_id]) for p in pend]
    sp.rollback()  # gives back every lock taken since the savepoint
    rows = _runs(conn, tenant_id, set(rows), lock=True)
    again = list(
        conn.execute(
            select(workflow_run_pending)
            .where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(rows)),
                workflow_run_pending.c.wake_at < clock.now(),
            )
            .order_by(workflow_run_pending.c.wake_at)
            .with_for_update(skip_locked=True)
        )
    )
    return len(pend), [(p, rows[p.run_id]) for p in again]


def _runs(conn: Connection, tenant_id: str, run_ids: set[str], lock: bool) -> dict[str, Any]:
    if not run_ids:
        return {}
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id.in_(sorted(run_ids))
    )
    if lock:
        q = q.order_by(workflow_runs.c.run_id).with_for_update(skip_locked=True)
    return {r.run_id: r for r in conn.execute(q)}


def _failed(row: Any, step_index: int, reason: str, error: str) -> NewEvent:
    log.warning(
        "workflow run failed on resume",
        extra={"run_id": row.run_id, "workflow": row.workflow_name, "reason": reason},
    )
    return NewEvent(ev.RUN_FAILED, ev.run_failed(row.workflow_name, step_index, error, reason))


def claim_batch(conn: Connection, tenant_id: str, pairs: list[Any]) -> list[Claim]:
    """Rules 2-7 of resume-run for many (pending, runs row) pairs whose rows the
    caller locked, inside the caller's transaction: one Claim per pair."""
    claims: list[Claim | None] = []
    batch: list[tuple[StreamId, list[NewEvent], int]] = []
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[tuple[int, Any, Any, api.Workflow]] = []
    seen: set[str] = set()
    for p, row in pairs:
        # rule 2 (no row: never got here), rule 3 before the definition lookup
        if row is None or p.run_id in seen or settled(row, p):
            claims.append(Claim(ALREADY))
            continue
        seen.add(p.run_id)
        wf = registry.get(row.workflow_name)  # rule 4
        if wf is None or wf.fingerprint != (p.definition_fingerprint or row.fingerprint):
            why = (
                "is not registered" if wf is None else "definition changed since the run suspended"
            )
            batch.append(
                (
                    engine.stream(tenant_id, row.run_id),
                    [
                        _failed(
                            row,
                            p.step_index,
                            ev.REASON_DEFINITION_CHANGED,
                            f"workflow {row.workflow_name!r} {why}",
                        )
                    ],
                    row.version,
                )
            )
            claims.append(Claim(FAILED, reason=ev.REASON_DEFINITION_CHANGED))
            continue
        todo.append((len(claims), p, row, wf))
        claims.append(None)
    # rule 6 reads, one statement: trigger events and awaited events by reference
    wanted = {(row.trigger_event_ref or {}).get("eventId", "") for _, _, row, _ in todo}
    wanted |= {
        p.trigger_event_ref.get("eventId", "")
        for _, p, _, _ in todo
        if p.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and p.trigger_event_ref
    }
    found = get_events(conn, wanted - {""}) if todo else {}
    lease = clock.now() + engine.LEASE
    for at, p, row, wf in todo:
        # rule 5: the claim is the step.resumed appended at the row's version
        # (the stream's); a concurrent writer makes the whole append conflict.
        new = [NewEvent(ev.STEP_RESUMED, ev.step_resumed(p.step_index, p.retry_attempt))]
        batch.append((engine.stream(tenant_id, row.run_id), new, row.version))
        trigger = found.get((row.trigger_event_ref or {}).get("eventId", ""))
        step = wf.steps[p.step_index] if p.step_index < len(wf.steps) else None
        if trigger is None:
            new.append(
                _failed(
                    row,
                    p.step_index,
                    ev.REASON_TRIGGER_UNAVAILABLE,
                    "trigger event unavailable",
                )
            )
            claims[at] = Claim(FAILED, reason=ev.REASON_TRIGGER_UNAVAILABLE)
            continue
        if step is None:
            new.append(
                _failed(row, p.step_index, ev.REASON_DEFINITION_CHANGED, "step index out of range")
            )
            claims[at] = Claim(FAILED, reason=ev.REASON_DEFINITION_CHANGED)
            continue
        results = dict(row.results or {})
        if p.suspension_event_type == ev.RETRY_SCHEDULED:
            # rule 7: a retry continues at the same step as the next attempt
            values: dict[str, Any] = dict(
                step_index=p.step_index, attempt=int(p.retry_attempt or 1)
            )
        else:
            value: Any = None
            if p.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and p.trigger_event_ref:
                awaited = found.get(p.trigger_event_ref.get("eventId", ""))
                if awaited is None:
                    new.append(
                        _failed(
                            row,
                            p.step_index,
                            ev.REASON_AWAITED_UNAVAILABLE,
                            "awaited event unavailable",
                        )
                    )
                    claims[at] = Claim(FAILED, reason=ev.REASON_AWAITED_UNAVAILABLE)
                    continue
                value = awaited.payload
                results[engine.CONSUMED] = max(
                    int(results.get(engine.CONSUMED, 0)), awaited.position
                )
            results[step.name] = value  # timeout: an empty result
            values = dict(step_index=p.step_index + 1, attempt=1, results=results)
        token = engine.new_token()
        extra[(tenant_id, row.run_id)] = dict(lease_token=token, lease_until=lease, **values)
        claims[at] = Claim(
            RESUMED,
            token=token,
            state=engine.RunState(
                tenant_id,
                row.run_id,
                token,
                wf,
                trigger,
                values["step_index"],
                values["attempt"],
                results,
                row.fingerprint,
            ),
        )
    engine.append_batch(conn, batch, extra)
    return [c if c is not None else Claim(ALREADY) for c in claims]


def claim(conn: Connection, tenant_id: str, run_id: str, step_index: int) -> Claim:
    """Rules 2-7 of resume-run for one (run, step), inside the caller's transaction."""
    pairs = _lock_keys(conn, tenant_id, [(run_id, step_index)])
    if not pairs:  # rule 2
        return Claim(ALREADY)
    return claim_batch(conn, tenant_id, pairs)[0]


def resume_run(tenant_id: str, run_id: Any, step_index: Any) -> str:
    """The resume-run handler: claim, then run until the next suspension or the end."""
    rid, idx = validate(run_id, step_index)
    try:
        with db.transaction() as conn:
            c = claim(conn, tenant_id, rid, idx)
    except VersionConflict:
        return ALREADY  # rule 5: another resume won the stream's version
    if c.outcome != RESUMED:
        return c.outcome
    assert c.token is not None and c.state is not None
    engine.execute(tenant_id, rid, c.token, c.state)
    return RESUMED


def pending_wake_at(tenant_id: str, run_id: str, step_index: int) -> datetime | None:
    with db.reading() as conn:
        return conn.execute(
            select(workflow_run_pending.c.wake_at).where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id == run_id,
                workflow_run_pending.c.step_index == step_index,
            )
        ).scalar()


def _fail(conn: Connection, row: Any, step_index: int, reason: str, error: str) -> None:
    engine.append_run_event(
        conn, row, ev.RUN_FAILED, ev.run_failed(row.workflow_name, step_index, error, reason)
    )
    log.warning(
        "workflow run failed on resume",
        extra={"run_id": row.run_id, "workflow": row.workflow_name, "reason": reason},
    )


def advance(tenant_id: str, run_id: str) -> str:
    """Take the lease of a running run nobody holds (just started, retried by an
    operator, or its worker died) and run it from its last committed step."""
    with db.transaction() as conn:
        row = engine.lock_run(conn, tenant_id, run_id)
        now = clock.now()
        if row is None or row.status != "running":
            return "not-running"
        if row.lease_token is not None and row.lease_until is not None and row.lease_until > now:
            return "leased"
        wf = registry.get(row.workflow_name)
        if wf is None or wf.fingerprint != row.fingerprint:
            _fail(
                conn,
                row,
                row.step_index,
                ev.REASON_DEFINITION_CHANGED,
                "workflow definition changed or not registered",
            )
            return FAILED
        trigger = get_event(conn, (row.trigger_event_ref or {}).get("eventId", ""))
        if trigger is None:
            _fail(
                conn,
                row,
                row.step_index,
                ev.REASON_TRIGGER_UNAVAILABLE,
                "trigger event unavailable",
            )
            return FAILED
        token = engine.new_token()
        conn.execute(
            update(workflow_runs)
            .where(workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id)
            .values(lease_token=token, lease_until=now + engine.LEASE, updated_at=now)
        )
    state = engine.RunState.leased(row, token, wf, trigger)
    return engine.execute(tenant_id, run_id, token, state)


def drain_batch(tenant_id: str, limit: int = BATCH) -> int:
    """Claim up to `limit` due rows of a tenant, oldest first, in one transaction
    (FOR UPDATE SKIP LOCKED on PostgreSQL, so parallel drains take disjoint rows),
    then continue the claimed runs: those that reach their next stop without a
    commit of their own are finished together in one more transaction, the
    others run one by one. One failing row is logged; the rest continue.
    Returns the number of due rows found (a full batch means: go on)."""
    claims: list[Claim] = []
    found = 0
    keys: list[tuple[str, int]] = []
    for attempt in range(3):
        try:
            with db.transaction() as conn:
                found, pairs = _lock_due(conn, tenant_id, limit)
                keys = [(p.run_id, p.step_index) for p, _ in pairs]
                claims = claim_batch(conn, tenant_id, pairs)
            break
        except VersionConflict:
            log.warning("batch claim conflicted; trying again", extra={"attempt": attempt})
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) not in _RETRYABLE:
                log.exception("batch claim failed; claiming row by row")
                claims = _claim_each(tenant_id, keys)
                break
            log.warning("batch claim deadlocked; trying again", extra={"attempt": attempt})
    else:
        claims = _claim_each(tenant_id, keys)
    continue_runs(tenant_id, [c.state for c in claims if c.outcome == RESUMED and c.state])
    return found


def _claim_each(tenant_id: str, keys: list[tuple[str, int]]) -> list[Claim]:
    """The slow path after a failed batch: each row in its own transaction, one
    failing row logged while the rest continue."""
    out = []
    for run_id, step_index in keys:
        try:
            with db.transaction() as conn:
                out.append(claim(conn, tenant_id, run_id, step_index))
        except Exception:
            log.exception(
                "resume dispatch failed", extra={"run_id": run_id, "step_index": step_index}
            )
    return out


def continue_runs(tenant_id: str, states: list[engine.RunState]) -> None:
    """Run claimed runs on: the quick ones in memory, committed together."""
    outcomes: list[engine.Outcome] = []
    slow: list[engine.RunState] = []
    for st in states:
        if not engine.quick(st):
            slow.append(st)
            continue
        r = engine.run(st)
        if isinstance(r, engine.Outcome):
            outcomes.append(r)
    try:
        engine.finish_many(tenant_id, outcomes)
    except Exception:
        # Infrastructure trouble: the leases expire and the sweep picks them up.
        log.exception("resumed runs failed to continue", extra={"runs": len(outcomes)})
    for st in slow:
        try:
            engine.execute(tenant_id, st.run_id, st.token, st)
        except Exception:
            log.exception("resumed run failed to continue", extra={"run_id": st.run_id})


DRAIN_BUDGET_S = 60.0  # well under the RQ job timeout; a continuation job takes over


def drain(tenant_id: str, helpers: bool = True, budget_s: float = DRAIN_BUDGET_S) -> int:
    """Drain due rows, continuing at once while a batch was full; a full batch
    also asks for a helper drain so other workers share a backlog. After
    `budget_s` a still-full backlog is handed to a fresh drain job."""
    import time

    total = 0
    deadline = time.monotonic() + budget_s
    while True:
        n = drain_batch(tenant_id)
        total += n
        if n < BATCH:
            return total
        if helpers:
            _request_helper(tenant_id)
        if time.monotonic() > deadline:
            from webapp.jobs import enqueue

            enqueue(DRAIN_FUNC, tenant_id)
            return total


def _request_helper(tenant_id: str) -> None:
    from webapp.jobs import enqueue

    try:
        if not get_redis().set(f"webapp:wf:drain-helper:{tenant_id}", "1", nx=True, px=500):
            return
    except Exception:
        return
    enqueue(DRAIN_FUNC, tenant_id)


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
