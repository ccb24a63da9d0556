"""Read models of the run events, maintained inline (in the append's own
transaction): the pending set `workflow_run_pending` and the `workflow_runs` row.

The original maintains the pending set with an async projection. Doing it inline
means a suspension and its pending row commit together, so the resume job can be
scheduled in the same breath (after commit) and never finds the row missing; a
claim (step.resumed) deletes the row in the claiming transaction, which is what
keeps concurrent resumes from seeing it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    String,
    Table,
    bindparam,
    cast,
    column,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy import values as sa_values
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


def _fingerprint(conn: Connection, e: Event) -> str | None:
    """The fingerprint a suspension stores: its payload's, else the run's (retry.scheduled)."""
    fp = e.payload.get("definitionFingerprint")
    if fp:
        return str(fp)
    row = conn.execute(select(workflow_runs.c.fingerprint).where(_run_key(e))).first()
    return row.fingerprint if row else None


def _pending_row(e: Event, fingerprint: str | None) -> dict[str, Any]:
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


def _suspended_values(e: Event, now: datetime) -> dict[str, Any]:
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


def _resumed_values(e: Event, now: datetime) -> dict[str, Any]:
    return dict(status="running", version=e.version, updated_at=now)


def _settled_values(e: Event, now: datetime) -> dict[str, Any]:
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


def _on_suspended(conn: Connection, e: Event) -> None:
    if _collected(conn, e):
        return
    upsert(
        conn,
        workflow_run_pending,
        _pending_row(e, _fingerprint(conn, e)),
        ["tenant_id", "run_id", "step_index"],
    )
    conn.execute(
        update(workflow_runs).where(_run_key(e)).values(**_suspended_values(e, clock.now()))
    )


def _on_resumed(conn: Connection, e: Event) -> None:
    if _collected(conn, e):
        return
    conn.execute(delete(workflow_run_pending).where(_pending_key(e)))
    conn.execute(update(workflow_runs).where(_run_key(e)).values(**_resumed_values(e, clock.now())))


def _on_settled(conn: Connection, e: Event) -> None:
    if _collected(conn, e):
        return
    conn.execute(delete(workflow_run_pending).where(_pending_key(e)))
    now = clock.now()
    values = _settled_values(e, now)
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


# -- batches -------------------------------------------------------------------
#
# The drain claims and finishes runs a hundred at a time. Inside `batched(conn)`
# the handlers above only collect the run events; `flush` then applies the very
# same effects set-based, in the same transaction: one DELETE of the pending
# rows, one multi-row upsert of new ones, one executemany UPDATE of the runs
# rows (plus whatever the caller's transaction knows, e.g. the new lease).

_BATCH = "workflows.batched_projection"


@contextmanager
def batched(conn: Connection) -> Iterator[list[Event]]:
    collected: list[Event] = []
    conn.info[_BATCH] = collected
    try:
        yield collected
    finally:
        conn.info.pop(_BATCH, None)


def _collected(conn: Connection, e: Event) -> bool:
    batch = conn.info.get(_BATCH)
    if batch is None:
        return False
    batch.append(e)
    return True


def flush(
    conn: Connection,
    collected: Sequence[Event],
    extra: dict[tuple[str, str], dict[str, Any]] | None = None,
) -> None:
    """Apply the collected run events (in order) like their inline handlers
    would, then `extra` values per (tenant, run). Every run must have its
    `workflow_runs` row already (a batch works on locked, existing runs)."""
    now = clock.now()
    cleared: dict[str, set[str]] = {}
    new_rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    runs_values: dict[tuple[str, str], dict[str, Any]] = {}
    for e in collected:
        key = (e.tenant_id, e.aggregate_id)
        values = runs_values.setdefault(key, {})
        if e.type in ev.SUSPENSIONS:
            row = _pending_row(e, _fingerprint(conn, e))
            new_rows[(e.tenant_id, e.aggregate_id, row["step_index"])] = row
            values.update(_suspended_values(e, now))
        elif e.type == ev.STEP_RESUMED or e.type in ev.SETTLING:
            # deletes run before the upserts: drop rows this batch suspended earlier
            cleared.setdefault(e.tenant_id, set()).add(e.aggregate_id)
            for k in [k for k in new_rows if k[:2] == key]:
                del new_rows[k]
            values.update(
                _resumed_values(e, now) if e.type == ev.STEP_RESUMED else _settled_values(e, now)
            )
        else:  # pragma: no cover - only run events of these kinds are collected
            raise ValueError(f"cannot batch {e.type}")
    for key, more in (extra or {}).items():
        runs_values.setdefault(key, {}).update(more, updated_at=now)
    for tenant_id, run_ids in cleared.items():
        conn.execute(
            delete(workflow_run_pending).where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(run_ids)),
            )
        )
    upsert_many(
        conn,
        workflow_run_pending,
        [new_rows[k] for k in sorted(new_rows)],
        ["tenant_id", "run_id", "step_index"],
    )
    update_runs(conn, runs_values)


def update_runs(conn: Connection, runs_values: dict[tuple[str, str], dict[str, Any]]) -> None:
    """UPDATE many runs rows: per distinct set of columns one UPDATE .. FROM
    (VALUES ..) on PostgreSQL (one round trip), one executemany on SQLite."""
    groups: dict[tuple[str, ...], list[tuple[str, str, dict[str, Any]]]] = {}
    for (tenant_id, run_id), values in sorted(runs_values.items()):
        if values:
            groups.setdefault(tuple(sorted(values)), []).append((tenant_id, run_id, values))
    for cols, items in groups.items():
        if db.is_sqlite(conn):
            stmt = (
                update(workflow_runs)
                .where(
                    workflow_runs.c.tenant_id == bindparam("k_tenant"),
                    workflow_runs.c.run_id == bindparam("k_run"),
                )
                .values({c: bindparam(f"v_{c}") for c in cols})
            )
            conn.execute(
                stmt,
                [
                    {"k_tenant": t, "k_run": r, **{f"v_{c}": v[c] for c in cols}}
                    for t, r, v in items
                ],
            )
            continue
        for start in range(0, len(items), 500):
            chunk = items[start : start + 500]
            rows = sa_values(
                column("k_tenant", String),
                column("k_run", String),
                *[column(f"v_{c}", workflow_runs.c[c].type) for c in cols],
                name="v",
            ).data([(t, r, *(v[c] for c in cols)) for t, r, v in chunk])
            conn.execute(
                update(workflow_runs)
                .where(
                    workflow_runs.c.tenant_id == rows.c.k_tenant,
                    workflow_runs.c.run_id == rows.c.k_run,
                )
                # a column that is NULL in every row would be text: cast each
                .values({c: cast(rows.c[f"v_{c}"], workflow_runs.c[c].type) for c in cols})
            )


def register() -> None:
    register_inline(ev.RUN_STARTED, _on_started)
    for t in ev.SUSPENSIONS:
        register_inline(t, _on_suspended)
    register_inline(ev.STEP_RESUMED, _on_resumed)
    for t in ev.SETTLING:
        register_inline(t, _on_settled)
    register_inline(ev.RUN_RETRIED, _on_retried)
