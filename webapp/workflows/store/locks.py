"""Row locks on the run tables, the dialect switch written once (`locked`;
`_prebuilt` for the statements built once), and locking many runs at once for
the claims, the drain and the finishes.

Every locker takes the runs rows before the pending rows, in run id order, so
two lockers never deadlock. On PostgreSQL the drain takes its rows FOR UPDATE
SKIP LOCKED, so parallel drains take disjoint rows; SQLite's single writer
serialises the whole transaction instead."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, select

from webapp.core import clock, db
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs


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
