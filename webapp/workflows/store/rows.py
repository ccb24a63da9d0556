"""The read models of the run events, their rows: `workflow_runs` (one per
run) and `workflow_run_pending` (one per suspended step). What each run event
sets, as plain values, shared by the inline handlers (`projection`) and the
set-based batch (`batch`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Table, select
from sqlalchemy.dialects import postgresql, sqlite

from webapp import db
from webapp.eventstore import Event
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

# A started run not picked up by a worker within this time is re-dispatched by the sweep.
START_GRACE = timedelta(seconds=10)


def upsert(conn: Connection, table: Table, values: dict[str, Any], keys: list[str]) -> None:
    stmt: Any = (sqlite.insert if db.is_sqlite(conn) else postgresql.insert)(table).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=keys, set_={k: v for k, v in values.items() if k not in keys}
    )
    conn.execute(stmt)


def upsert_many(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], keys: list[str]
) -> None:
    """One multi-row INSERT .. ON CONFLICT DO UPDATE (rows share their columns)."""
    if not rows:
        return
    stmt: Any = (sqlite.insert if db.is_sqlite(conn) else postgresql.insert)(table).values(
        list(rows)
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=keys, set_={k: stmt.excluded[k] for k in rows[0] if k not in keys}
    )
    conn.execute(stmt)


def run_key(e: Event) -> Any:
    return (workflow_runs.c.tenant_id == e.tenant_id) & (workflow_runs.c.run_id == e.aggregate_id)


def pending_key(e: Event) -> Any:
    return (workflow_run_pending.c.tenant_id == e.tenant_id) & (
        workflow_run_pending.c.run_id == e.aggregate_id
    )


def fingerprint_for(conn: Connection, e: Event) -> str | None:
    """The fingerprint a suspension stores: its payload's, else the run's (retry.scheduled)."""
    fp = e.payload.get("definitionFingerprint")
    if fp:
        return str(fp)
    row = conn.execute(select(workflow_runs.c.fingerprint).where(run_key(e))).first()
    return row.fingerprint if row else None


def pending_row(e: Event, fingerprint: str | None) -> dict[str, Any]:
    p = e.payload
    wake = p.get("wakeAt") or p["timeoutAt"]
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        step_index=int(p["stepIndex"]),
        workflow_name=p["workflowName"],
        suspension_event_type=e.type,
        wake_at=datetime.fromisoformat(wake),
        retry_attempt=p.get("attempt") if e.type == ev.RETRY_SCHEDULED else None,
        definition_fingerprint=fingerprint,
        wait_event_type=p.get("eventType"),
        match_expr=p.get("match"),
        trigger_event_type=None,
        trigger_event_ref=None,
    )


def suspended_values(e: Event, now: datetime) -> dict[str, Any]:
    values: dict[str, Any] = dict(
        status="suspended",
        step_index=int(e.payload["stepIndex"]),
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )
    if e.type == ev.RETRY_SCHEDULED:
        values["attempt"] = int(e.payload["attempt"])
    return values


def resumed_values(e: Event, now: datetime) -> dict[str, Any]:
    return dict(status="running", version=e.version, updated_at=now)


def settled_values(e: Event, now: datetime) -> dict[str, Any]:
    status = {
        ev.RUN_COMPLETED: "completed",
        ev.RUN_FAILED: "failed",
        ev.RUN_CANCELLED: "cancelled",
    }[e.type]
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
    return values
