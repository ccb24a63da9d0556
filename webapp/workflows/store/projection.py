"""Inline projections of the run events (in the append's own transaction):
the pending set `workflow_run_pending` and the `workflow_runs` row.

The original maintains the pending set with an async projection. Doing it inline
means a suspension and its pending row commit together, so the resume job can be
scheduled in the same breath (after commit) and never finds the row missing; a
claim (step.resumed) deletes the row in the claiming transaction, which is what
keeps concurrent resumes from seeing it. Inside `batch.batched(conn)` the
handlers only collect the events for a set-based `batch.flush`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, insert, update

from webapp import clock
from webapp.eventstore import Event, register_inline
from webapp.workflows.store import rows as rm
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.batch import collected
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs


def _on_started(conn: Connection, e: Event) -> None:
    p = e.payload
    now = clock.now()
    conn.execute(delete(workflow_run_pending).where(rm.pending_key(e)))
    rm.upsert(
        conn,
        workflow_runs,
        dict(
            tenant_id=e.tenant_id,
            run_id=e.aggregate_id,
            workflow_name=p["workflowName"],
            status="running",
            step_index=0,
            attempt=1,
            version=e.version,
            fingerprint=p["definitionFingerprint"],
            idempotency_key=p.get("idempotencyKey"),
            trigger_event_type=p["triggerEventType"],
            trigger_event_ref=p["triggerEventRef"],
            subject_id=(p["triggerEventRef"] or {}).get("aggregateId"),
            started_position=e.position,
            results={},
            error=None,
            reason=None,
            lease_token=None,
            lease_until=now + rm.START_GRACE,
            started_at=now,
            updated_at=now,
        ),
        ["tenant_id", "run_id"],
    )


def _on_suspended(conn: Connection, e: Event) -> None:
    if collected(conn, e):
        return
    rm.upsert(
        conn,
        workflow_run_pending,
        rm.pending_row(e, rm.fingerprint_for(conn, e)),
        ["tenant_id", "run_id", "step_index"],
    )
    conn.execute(
        update(workflow_runs).where(rm.run_key(e)).values(**rm.suspended_values(e, clock.now()))
    )


def _on_resumed(conn: Connection, e: Event) -> None:
    if collected(conn, e):
        return
    conn.execute(delete(workflow_run_pending).where(rm.pending_key(e)))
    conn.execute(
        update(workflow_runs).where(rm.run_key(e)).values(**rm.resumed_values(e, clock.now()))
    )


def _on_settled(conn: Connection, e: Event) -> None:
    if collected(conn, e):
        return
    conn.execute(delete(workflow_run_pending).where(rm.pending_key(e)))
    now = clock.now()
    values = rm.settled_values(e, now)
    done = conn.execute(update(workflow_runs).where(rm.run_key(e)).values(**values)).rowcount
    if not done:
        # A failure recorded before any run-started (e.g. a trigger filter raised).
        row: dict[str, Any] = dict(
            tenant_id=e.tenant_id,
            run_id=e.aggregate_id,
            workflow_name=e.payload.get("workflowName", "?"),
            step_index=int(e.payload.get("stepIndex", 0)),
            attempt=1,
            fingerprint="",
            started_position=e.position,
            results={},
            started_at=now,
        )
        row.update(values)
        conn.execute(insert(workflow_runs).values(**row))


def _on_retried(conn: Connection, e: Event) -> None:
    now = clock.now()
    conn.execute(
        update(workflow_runs)
        .where(rm.run_key(e))
        .values(
            status="running",
            step_index=int(e.payload["stepIndex"]),
            attempt=1,
            version=e.version,
            error=None,
            reason=None,
            lease_token=None,
            lease_until=now + rm.START_GRACE,
            updated_at=now,
        )
    )


def register() -> None:
    register_inline(ev.RUN_STARTED, _on_started)
    for t in ev.SUSPENSIONS:
        register_inline(t, _on_suspended)
    register_inline(ev.STEP_RESUMED, _on_resumed)
    for t in ev.SETTLING:
        register_inline(t, _on_settled)
    register_inline(ev.RUN_RETRIED, _on_retried)
