"""A run's stream and its `workflow_runs` row: lock, append, save progress;
a subject's runs (erasure). Pending rows: `pending`.

Row locks, the dialect switch written once (`locked`; `_prebuilt` for the
statements built once), and locking many runs at once for the claims, the
drain and the finishes: every locker takes the runs rows before the pending
rows, in run id order, so two lockers never deadlock. On PostgreSQL the drain
takes its rows FOR UPDATE SKIP LOCKED, so parallel drains take disjoint rows;
SQLite's single writer serialises the whole transaction instead.
"""

from __future__ import annotations

import uuid
from collections import namedtuple
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, select, update

from webapp.core import clock, db
from webapp.eventstore import (
    Event,
    Metadata,
    NewEvent,
    StreamId,
    append,
    append_many,
    projections,
)
from webapp.workflows.store import projection, sql
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import OPEN, RunStatus
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

# -- row locks ------------------------------------------------------------------


def locked(conn: Connection, q: Select[Any], *order_by: Any, skip_locked: bool = False) -> Any:
    """`q` FOR UPDATE on PostgreSQL, its rows locked in `order_by` order (every
    locker of several runs orders by run id, so two never deadlock); `q` itself
    on SQLite."""
    if db.is_sqlite(conn):
        return q
    if order_by:
        q = q.order_by(*order_by)
    return q.with_for_update(skip_locked=skip_locked)


def _of_runs(table: Any) -> Select[Any]:
    """`table`'s rows of one tenant's runs, the ids bound as one expanding
    parameter: built once, so a claim does not build and key it anew."""
    return select(table).where(
        table.c.tenant_id == bindparam("tenant"),
        table.c.run_id.in_(bindparam("ids", expanding=True)),
    )


def _prebuilt(conn: Connection, plain: Any, for_update: Any) -> Any:
    """The dialect switch of `locked` for the statements built once: the
    FOR UPDATE one on PostgreSQL, the plain one on SQLite."""
    return plain if db.is_sqlite(conn) else for_update


_RUNS = _of_runs(workflow_runs)
_RUNS_LOCKED = {  # by skip_locked; rows locked in run id order
    skip: _RUNS.order_by(workflow_runs.c.run_id).with_for_update(skip_locked=skip)
    for skip in (False, True)
}
_PENDING = _of_runs(workflow_run_pending)
_PENDING_LOCKED = _PENDING.order_by(workflow_run_pending.c.run_id).with_for_update()


def lock_runs(
    conn: Connection,
    tenant_id: str,
    run_ids: Iterable[str],
    skip_locked: bool = False,
    lock: bool = True,
) -> dict[str, Any]:
    """The runs rows of these runs, locked (PostgreSQL; `lock=False`: only
    read, as a preview does), by run id."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    q = _prebuilt(conn, _RUNS, _RUNS_LOCKED[skip_locked]) if lock else _RUNS
    return {r.run_id: r for r in conn.execute(q, {"tenant": tenant_id, "ids": ids})}


def lock_for_finish(conn: Connection, tenant_id: str, run_ids: list[str]) -> dict[str, Any]:
    """What a finish checks of its runs (status, lease, version), locked."""
    q = select(
        workflow_runs.c.run_id,
        workflow_runs.c.status,
        workflow_runs.c.lease_token,
        workflow_runs.c.version,
    ).where(workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id.in_(run_ids))
    return {r.run_id: r for r in conn.execute(locked(conn, q, workflow_runs.c.run_id))}


def lock_keys(conn: Connection, tenant_id: str, keys: list[tuple[str, int]]) -> list[Any]:
    """(pending, runs row) for the given (run, step) keys, locked (PostgreSQL;
    `read_keys` only reads them)."""
    run_ids = sorted({rid for rid, _ in keys})
    rows = lock_runs(conn, tenant_id, run_ids)
    if not run_ids:
        return []
    pq = _prebuilt(conn, _PENDING, _PENDING_LOCKED)
    wanted = set(keys)
    return [
        (p, rows.get(p.run_id))
        for p in conn.execute(pq, {"tenant": tenant_id, "ids": run_ids})
        if (p.run_id, p.step_index) in wanted
    ]


# The unlocked read of `read_keys`: each pending row with its runs row, in one
# statement built once (the ids bound as one expanding parameter).
PendingRow = namedtuple("PendingRow", [c.name for c in workflow_run_pending.c])  # type: ignore[misc]
RunRow = namedtuple("RunRow", [c.name for c in workflow_runs.c])  # type: ignore[misc]
_PENDING_WIDTH = len(workflow_run_pending.c)
_PAIRS = (
    select(*workflow_run_pending.c, *(c.label(f"run_{c.name}") for c in workflow_runs.c))
    .select_from(
        workflow_run_pending.outerjoin(
            workflow_runs,
            and_(
                workflow_runs.c.tenant_id == workflow_run_pending.c.tenant_id,
                workflow_runs.c.run_id == workflow_run_pending.c.run_id,
            ),
        )
    )
    .where(
        workflow_run_pending.c.tenant_id == bindparam("tenant"),
        workflow_run_pending.c.run_id.in_(bindparam("ids", expanding=True)),
    )
)


def read_keys(conn: Connection, tenant_id: str, keys: list[tuple[str, int]]) -> list[Any]:
    """(pending, runs row or None) for the given (run, step) keys, only read:
    what `lock_keys` reads, in one statement instead of two (settle-ahead's
    read ahead of every claim). The rows are named tuples of the tables'
    columns."""
    ids = sorted({rid for rid, _ in keys})
    if not ids:
        return []
    wanted = set(keys)
    out = []
    for r in conn.execute(_PAIRS, {"tenant": tenant_id, "ids": ids}):
        p: Any = PendingRow(*r[:_PENDING_WIDTH])
        if (p.run_id, p.step_index) in wanted:
            run: Any = RunRow(*r[_PENDING_WIDTH:])
            out.append((p, run if run.run_id is not None else None))
    return out


def lock_due(conn: Connection, tenant_id: str, limit: int) -> tuple[int, list[Any]]:
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
            workflow_run_pending.c.wake_at <= clock.now(),
            workflow_run_pending.c.paused.is_(False),
        )
        .order_by(workflow_run_pending.c.wake_at)
        .limit(limit)
    )
    if db.is_sqlite(conn):
        pend = list(conn.execute(q))
        rows = lock_runs(conn, tenant_id, {p.run_id for p in pend})  # SQLite: no row locks
        return len(pend), [(p, rows.get(p.run_id)) for p in pend]
    sp = conn.begin_nested()
    pend = list(conn.execute(q.with_for_update(skip_locked=True)))
    rows = lock_runs(conn, tenant_id, {p.run_id for p in pend}, skip_locked=True)
    if all(p.run_id in rows for p in pend):
        sp.commit()
        return len(pend), [(p, rows[p.run_id]) for p in pend]
    sp.rollback()  # gives back every lock taken since the savepoint
    rows = lock_runs(conn, tenant_id, set(rows), skip_locked=True)
    again = list(
        conn.execute(
            select(workflow_run_pending)
            .where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(rows)),
                workflow_run_pending.c.wake_at <= clock.now(),
            )
            .order_by(workflow_run_pending.c.wake_at)
            .with_for_update(skip_locked=True)
        )
    )
    return len(pend), [(p, rows[p.run_id]) for p in again]


# -- a run's stream and its row ---------------------------------------------------


def stream(tenant_id: str, run_id: str) -> StreamId:
    return StreamId(tenant_id, ev.AGGREGATE_TYPE, run_id)


def new_token() -> str:
    return str(uuid.uuid4())


def lock_run(conn: Connection, tenant_id: str, run_id: str) -> Any:
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id
    )
    return conn.execute(locked(conn, q)).first()


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


def follow_stream(conn: Connection, e: Event) -> None:
    """Inline projection of a run event that sets nothing but moves the run's
    stream on (a message, a progress entry): the row's version follows it."""
    conn.execute(
        update(workflow_runs)
        .where(workflow_runs.c.tenant_id == e.tenant_id, workflow_runs.c.run_id == e.aggregate_id)
        .values(version=e.version)
    )


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
    return list(conn.execute(locked(conn, q, workflow_runs.c.run_id)))


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
