"""A run's stream and its `workflow_runs` row: lock, append, save progress;
a subject's runs (erasure). Pending rows: `pending`."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, select, update

from webapp.core import clock
from webapp.eventstore import (
    Event,
    Metadata,
    NewEvent,
    StreamId,
    append,
    append_many,
    projections,
)
from webapp.workflows.store import locks, projection, sql
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import OPEN, RunStatus
from webapp.workflows.store.tables import workflow_runs


def stream(tenant_id: str, run_id: str) -> StreamId:
    return StreamId(tenant_id, ev.AGGREGATE_TYPE, run_id)


def new_token() -> str:
    return str(uuid.uuid4())


def lock_run(conn: Connection, tenant_id: str, run_id: str) -> Any:
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id
    )
    return conn.execute(locks.locked(conn, q)).first()


def read_run(conn: Connection, tenant_id: str, run_id: str) -> Any:
    return conn.execute(
        select(workflow_runs).where(
            workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id
        )
    ).first()


def owned(conn: Connection, tenant_id: str, run_id: str, token: str) -> Any:
    """The locked runs row while we still hold its lease, else None."""
    row = lock_run(conn, tenant_id, run_id)
    if row is None or row.status != RunStatus.RUNNING or row.lease_token != token:
        return None
    return row


def dispatch_for(types: set[str]) -> bool:
    """Run events are read by their inline projections; a projection dispatch
    after their commit is only needed when an async projection (a workflow
    triggered by, or waiting for, a run event) subscribes to one of them."""
    return projections.subscribed(types)


def append_run_event(
    conn: Connection, row: Any, type_: str, payload: dict[str, Any], actor: str | None = None
) -> Event:
    """Append to the run's stream at the version the (locked) runs row says;
    `actor` (an operator's action) goes into the event's metadata."""
    s = stream(row.tenant_id, row.run_id)
    new = [NewEvent(type_, payload)]
    meta = Metadata(actor=actor)
    return append(conn, s, new, row.version, meta, dispatch=dispatch_for({type_}))[0]


def append_batch(
    conn: Connection,
    batch: list[tuple[StreamId, list[NewEvent], int]],
    extra: dict[tuple[str, str], dict[str, Any]] | None = None,
    running: bool = False,
    dispatch: bool | None = None,
) -> None:
    """Append run events to many run streams (each at its expected version) and
    apply their projections set-based, plus `extra` runs columns per run
    (`running` as in `projection.apply`). `dispatch`: whether the commit queues
    a projection dispatch (None: only when an async projection reads these types)."""
    if not batch:
        return
    if dispatch is None:
        dispatch = dispatch_for({e.type for _, evs, _ in batch for e in evs})
    with projection.batched(conn) as collected:
        if len(batch) == 1:
            append(conn, *batch[0], dispatch=dispatch)  # one round trip fewer than append_many
        else:
            append_many(conn, batch, dispatch=dispatch)
    projection.apply(conn, collected, extra, running)


def set_columns(conn: Connection, values: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Set columns of many runs rows ((tenant, run) -> columns), no event."""
    sql.update_runs(conn, values)


def save(conn: Connection, row: Any, **values: Any) -> None:
    conn.execute(
        update(workflow_runs)
        .where(workflow_runs.c.tenant_id == row.tenant_id, workflow_runs.c.run_id == row.run_id)
        .values(updated_at=clock.now(), **values)
    )


def save_owned(conn: Connection, tenant_id: str, run_id: str, token: str, **values: Any) -> bool:
    """Commit progress if we still hold the lease: one statement, no read."""
    done = conn.execute(
        update(workflow_runs)
        .where(
            workflow_runs.c.tenant_id == tenant_id,
            workflow_runs.c.run_id == run_id,
            workflow_runs.c.status == RunStatus.RUNNING,
            workflow_runs.c.lease_token == token,
        )
        .values(updated_at=clock.now(), **values)
    ).rowcount
    return bool(done)


def open_runs_of(conn: Connection, tenant_id: str, subject_id: str) -> list[Any]:
    """The open runs of a subject (the trigger event's aggregate), locked."""
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id,
        workflow_runs.c.subject_id == subject_id,
        workflow_runs.c.status.in_(OPEN),
    )
    return list(conn.execute(locks.locked(conn, q, workflow_runs.c.run_id)))


def forget_results(conn: Connection, tenant_id: str, subject_id: str) -> int:
    """Erase what every run of a subject computed; the runs touched."""
    return int(
        conn.execute(
            update(workflow_runs)
            .where(
                workflow_runs.c.tenant_id == tenant_id,
                workflow_runs.c.subject_id == subject_id,
            )
            .values(results={}, error=None)
        ).rowcount
    )
