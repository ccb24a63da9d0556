"""Read models of the run events, maintained inline (in the append's own
transaction): the pending set `workflow_run_pending` and the `workflow_runs` row.

The original maintains the pending set with an async projection. Doing it inline
means a suspension and its pending row commit together, so the resume job can be
scheduled in the same breath (after commit) and never finds the row missing; a
claim (step.resumed) deletes the row in the claiming transaction, which is what
keeps concurrent resumes from seeing it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Table, delete, insert, update
from sqlalchemy.dialects import postgresql, sqlite

from webapp import clock, db
from webapp.eventstore import Event, register_inline
from webapp.workflows import events as ev
from webapp.workflows.tables import workflow_run_pending, workflow_runs

# A started run not picked up by a worker within this time is re-dispatched by the sweep.
START_GRACE = timedelta(seconds=10)


def upsert(conn: Connection, table: Table, values: dict[str, Any], keys: list[str]) -> None:
    stmt: Any = (sqlite.insert if db.is_sqlite(conn) else postgresql.insert)(table).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=keys, set_={k: v for k, v in values.items() if k not in keys}
    )
    conn.execute(stmt)


def _run_key(e: Event) -> Any:
    return (workflow_runs.c.tenant_id == e.tenant_id) & (workflow_runs.c.run_id == e.aggregate_id)


def _pending_key(e: Event) -> Any:
    return (workflow_run_pending.c.tenant_id == e.tenant_id) & (
        workflow_run_pending.c.run_id == e.aggregate_id
    )


def _on_started(conn: Connection, e: Event) -> None:
    p = e.payload
    now = clock.now()
    conn.execute(delete(workflow_run_pending).where(_pending_key(e)))
    upsert(
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
            started_position=e.position,
            results={},
            error=None,
            reason=None,
            lease_token=None,
            lease_until=now + START_GRACE,
            started_at=now,
            updated_at=now,
        ),
        ["tenant_id", "run_id"],
    )


def _on_suspended(conn: Connection, e: Event) -> None:
    p = e.payload
    step = int(p["stepIndex"])
    row = conn.execute(
        workflow_runs.select().where(_run_key(e)).with_only_columns(workflow_runs.c.fingerprint)
    ).first()
    fingerprint = p.get("definitionFingerprint") or (row.fingerprint if row else None)
    wake = p.get("wakeAt") or p["timeoutAt"]
    upsert(
        conn,
        workflow_run_pending,
        dict(
            tenant_id=e.tenant_id,
            run_id=e.aggregate_id,
            step_index=step,
            workflow_name=p["workflowName"],
            suspension_event_type=e.type,
            wake_at=datetime.fromisoformat(wake),
            retry_attempt=p.get("attempt") if e.type == ev.RETRY_SCHEDULED else None,
            definition_fingerprint=fingerprint,
            wait_event_type=p.get("eventType"),
            match_expr=p.get("match"),
            trigger_event_type=None,
            trigger_event_ref=None,
        ),
        ["tenant_id", "run_id", "step_index"],
    )
    values: dict[str, Any] = dict(
        status="suspended",
        step_index=step,
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=clock.now(),
    )
    if e.type == ev.RETRY_SCHEDULED:
        values["attempt"] = int(p["attempt"])
    conn.execute(update(workflow_runs).where(_run_key(e)).values(**values))


def _on_resumed(conn: Connection, e: Event) -> None:
    conn.execute(delete(workflow_run_pending).where(_pending_key(e)))
    conn.execute(
        update(workflow_runs)
        .where(_run_key(e))
        .values(status="running", version=e.version, updated_at=clock.now())
    )


def _on_settled(conn: Connection, e: Event) -> None:
    conn.execute(delete(workflow_run_pending).where(_pending_key(e)))
    status = {
        ev.RUN_COMPLETED: "completed",
        ev.RUN_FAILED: "failed",
        ev.RUN_CANCELLED: "cancelled",
    }[e.type]
    now = clock.now()
    values: dict[str, Any] = dict(
        status=status,
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )
    if e.type == ev.RUN_FAILED:
        values.update(error=e.payload.get("error"), reason=e.payload.get("reason"))
    if e.type != ev.RUN_COMPLETED and "stepIndex" in e.payload:
        values["step_index"] = int(e.payload["stepIndex"])
    done = conn.execute(update(workflow_runs).where(_run_key(e)).values(**values)).rowcount
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
        .where(_run_key(e))
        .values(
            status="running",
            step_index=int(e.payload["stepIndex"]),
            attempt=1,
            version=e.version,
            error=None,
            reason=None,
            lease_token=None,
            lease_until=now + START_GRACE,
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
