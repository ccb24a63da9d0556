"""resume-run (the seven rules, in order), the due-row drain and the sweep.

`claim` runs inside a transaction and decides; the continuation (running the
steps) happens after that transaction commits, under the lease the claim took.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select, update

from webapp import clock, db
from webapp.eventstore import VersionConflict, get_event, read_stream
from webapp.redis_conn import get_redis
from webapp.workflows import engine, registry
from webapp.workflows import events as ev
from webapp.workflows.tables import workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

BATCH = 100
DRAIN_FUNC = "worker.workflow_tasks.drain"

ALREADY = "already-resumed"
RESUMED = "resumed"
FAILED = "failed"


@dataclass(frozen=True)
class Claim:
    outcome: str  # resumed | already-resumed | failed
    token: str | None = None
    reason: str | None = None


def validate(run_id: Any, step_index: Any) -> tuple[str, int]:
    """Rule 1: runId is a UUID, stepIndex an integer >= 0."""
    try:
        rid = str(uuid.UUID(str(run_id)))
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"resume-run: runId must be a UUID, got {run_id!r}") from None
    if isinstance(step_index, bool) or not isinstance(step_index, int) or step_index < 0:
        raise ValueError(f"resume-run: stepIndex must be an integer >= 0, got {step_index!r}")
    return rid, step_index


def _pending(conn: Connection, tenant_id: str, run_id: str, step_index: int) -> Any:
    q = select(workflow_run_pending).where(
        workflow_run_pending.c.tenant_id == tenant_id,
        workflow_run_pending.c.run_id == run_id,
        workflow_run_pending.c.step_index == step_index,
    )
    if not db.is_sqlite(conn):
        q = q.with_for_update()
    return conn.execute(q).first()


def _settled(conn: Connection, row: Any, pending: Any) -> bool:
    """Rule 3: completed, failed, cancelled, or already resumed at this step and attempt."""
    if row.status in ("completed", "failed", "cancelled"):
        return True
    events = read_stream(conn, engine.stream(row.tenant_id, row.run_id))
    # Only the current run counts (a key may start a new run on the same stream).
    starts = [i for i, e in enumerate(events) if e.type == ev.RUN_STARTED]
    current = events[starts[-1] :] if starts else events
    suspended_at = None
    for i, e in enumerate(current):
        if e.type in ev.SETTLING:
            return True
        if e.type in ev.SUSPENSIONS and e.payload.get("stepIndex") == pending.step_index:
            suspended_at = i
    if suspended_at is None:
        return False
    for e in current[suspended_at + 1 :]:
        if (
            e.type == ev.STEP_RESUMED
            and e.payload.get("stepIndex") == pending.step_index
            and e.payload.get("retryAttempt") == pending.retry_attempt
        ):
            return True
    return False


def _fail(conn: Connection, row: Any, step_index: int, reason: str, error: str) -> Claim:
    try:
        with conn.begin_nested():
            engine.append_run_event(
                conn,
                row,
                ev.RUN_FAILED,
                ev.run_failed(row.workflow_name, step_index, error, reason),
            )
    except VersionConflict:
        return Claim(ALREADY)
    log.warning(
        "workflow run failed on resume",
        extra={"run_id": row.run_id, "workflow": row.workflow_name, "reason": reason},
    )
    return Claim(FAILED, reason=reason)


def claim(
    conn: Connection, tenant_id: str, run_id: str, step_index: int, pending: Any = None
) -> Claim:
    """Rules 2-7 of resume-run, inside the caller's transaction."""
    if pending is None:
        pending = _pending(conn, tenant_id, run_id, step_index)
    if pending is None:  # rule 2
        return Claim(ALREADY)
    row = engine.lock_run(conn, tenant_id, run_id)
    if row is None or _settled(conn, row, pending):  # rule 3, before the definition lookup
        return Claim(ALREADY)
    wf = registry.get(row.workflow_name)  # rule 4
    if wf is None:
        return _fail(
            conn,
            row,
            step_index,
            ev.REASON_DEFINITION_CHANGED,
            f"workflow {row.workflow_name!r} is not registered",
        )
    if wf.fingerprint != (pending.definition_fingerprint or row.fingerprint):
        return _fail(
            conn,
            row,
            step_index,
            ev.REASON_DEFINITION_CHANGED,
            f"workflow {row.workflow_name!r} definition changed since the run suspended",
        )
    try:  # rule 5: the claim
        with conn.begin_nested():
            engine.append_run_event(
                conn, row, ev.STEP_RESUMED, ev.step_resumed(step_index, pending.retry_attempt)
            )
    except VersionConflict:
        return Claim(ALREADY)
    row = engine.lock_run(conn, tenant_id, run_id)
    # rule 6: the trigger event and, for wait-for-event, the awaited event
    ref = row.trigger_event_ref or {}
    if get_event(conn, ref.get("eventId", "")) is None:
        return _fail(
            conn, row, step_index, ev.REASON_TRIGGER_UNAVAILABLE, "trigger event unavailable"
        )
    results = dict(row.results or {})
    step = wf.steps[step_index] if step_index < len(wf.steps) else None
    if step is None:
        return _fail(conn, row, step_index, ev.REASON_DEFINITION_CHANGED, "step index out of range")
    token = engine.new_token()
    lease = clock.now() + engine.LEASE
    if pending.suspension_event_type == ev.RETRY_SCHEDULED:
        # rule 7: a retry continues at the same step as the next attempt
        engine_values: dict[str, Any] = dict(
            step_index=step_index, attempt=int(pending.retry_attempt or 1)
        )
    else:
        value: Any = None
        if pending.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and pending.trigger_event_ref:
            awaited = get_event(conn, pending.trigger_event_ref.get("eventId", ""))
            if awaited is None:
                return _fail(
                    conn,
                    row,
                    step_index,
                    ev.REASON_AWAITED_UNAVAILABLE,
                    "awaited event unavailable",
                )
            value = awaited.payload
            results[engine.CONSUMED] = max(int(results.get(engine.CONSUMED, 0)), awaited.position)
        results[step.name] = value  # timeout: an empty result
        engine_values = dict(step_index=step_index + 1, attempt=1, results=results)
    conn.execute(
        update(workflow_runs)
        .where(workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id)
        .values(lease_token=token, lease_until=lease, updated_at=clock.now(), **engine_values)
    )
    return Claim(RESUMED, token=token)


def resume_run(tenant_id: str, run_id: Any, step_index: Any) -> str:
    """The resume-run handler: claim, then run until the next suspension or the end."""
    rid, idx = validate(run_id, step_index)
    with db.transaction() as conn:
        c = claim(conn, tenant_id, rid, idx)
    if c.outcome != RESUMED:
        return c.outcome
    assert c.token is not None
    engine.execute(tenant_id, rid, c.token)
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
        if get_event(conn, (row.trigger_event_ref or {}).get("eventId", "")) is None:
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
    return engine.execute(tenant_id, run_id, token)


def drain_batch(tenant_id: str, limit: int = BATCH) -> int:
    """Claim up to `limit` due rows of a tenant, oldest first, in one transaction
    (FOR UPDATE SKIP LOCKED on PostgreSQL, so parallel drains take disjoint rows),
    then run each claimed run. One failing row is logged; the rest continue."""
    claimed: list[tuple[str, str]] = []
    with db.transaction() as conn:
        q = (
            select(workflow_run_pending)
            .where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.wake_at < clock.now(),
            )
            .order_by(workflow_run_pending.c.wake_at)
            .limit(limit)
        )
        if not db.is_sqlite(conn):
            q = q.with_for_update(skip_locked=True)
        rows = list(conn.execute(q))
        for p in rows:
            try:
                with conn.begin_nested():
                    c = claim(conn, tenant_id, p.run_id, p.step_index, pending=p)
            except Exception:
                log.exception(
                    "resume dispatch failed", extra={"run_id": p.run_id, "step_index": p.step_index}
                )
                continue
            if c.outcome == RESUMED and c.token:
                claimed.append((p.run_id, c.token))
    for run_id, token in claimed:
        try:
            engine.execute(tenant_id, run_id, token)
        except Exception:
            # Infrastructure trouble: the lease expires and the sweep picks it up.
            log.exception("resumed run failed to continue", extra={"run_id": run_id})
    return len(rows)


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
