"""Concurrency slots: at most `limit.max` runs of one (tenant, workflow,
key) hold a slot at once; a run holds it from run-started until it settles.

Every admission to a key takes the append lock, then locks that key's
`workflow_slot_keys` row, and then counts the holders, so admissions to one key are serial, while a settle
only ever frees a slot. A new trigger starts at once when a slot is free and
nobody is queued before it (else it is queued: run-queued); a run settling
refills its key in the same transaction, just before commit (`refill`):
queued runs by priority (5 first), then oldest, skipping rows another
transaction holds. The minute sweep refills every key with queued runs, the
net for a limit raised (or removed) by a deploy or a lost refill.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, func, or_, select, tuple_

from webapp.core import db
from webapp.eventstore import Event, NewEvent, StreamId, append, hold_append_lock
from webapp.workflows.definition import catalog
from webapp.workflows.definition.controls import Limit
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import pending, sql, start_signal
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import HOLDING, RunStatus
from webapp.workflows.store.tables import workflow_runs, workflow_slot_keys

Key = tuple[str, str, str]  # (tenant, workflow, concurrency key)


def _starting(workflow_name: str) -> Workflow | None:
    """The version new triggers start, else the highest one registered."""
    wf = catalog.get(workflow_name)
    if wf is None:
        versions = catalog.versions(workflow_name)
        wf = versions[-1] if versions else None
    return wf


def limit_for(workflow_name: str) -> Limit | None:
    """The limit in force: the one of the version new triggers start (else
    of the highest version registered); a cron workflow's overlap skip or
    buffer_one is a limit of one."""
    wf = _starting(workflow_name)
    return wf.slot_limit if wf is not None else None


def lock_key(conn: Connection, key: Key) -> None:
    """Lock the key's row, after the append lock: a settle refills under the
    append lock it already holds, so every locker of a key takes the two in
    this order and none waits on the other's."""
    hold_append_lock(conn)
    tenant_id, workflow, ckey = key
    values = dict(tenant_id=tenant_id, workflow_name=workflow, concurrency_key=ckey)
    sql.insert_ignore(conn, workflow_slot_keys, values, list(values))
    if not db.is_sqlite(conn):  # SQLite: BEGIN IMMEDIATE already made us the only writer
        c = workflow_slot_keys.c
        conn.execute(
            select(c.tenant_id)
            .where(c.tenant_id == tenant_id, c.workflow_name == workflow, c.concurrency_key == ckey)
            .with_for_update()
        )


def _of(key: Key) -> Any:
    c = workflow_runs.c
    return (c.tenant_id == key[0]) & (c.workflow_name == key[1]) & (c.concurrency_key == key[2])


def holding(limit: Limit) -> tuple[RunStatus, ...]:
    """The statuses that hold a slot: running or waiting, or running only
    (`slot="active"`)."""
    return (RunStatus.RUNNING,) if limit.slot == "active" else HOLDING


def holders(conn: Connection, key: Key, limit: Limit) -> int:
    q = select(func.count()).where(_of(key), workflow_runs.c.status.in_(holding(limit)))
    return int(conn.execute(q).scalar_one())


# The order queued runs start in: priority (5 first), then oldest.
_START_ORDER = (
    workflow_runs.c.priority.desc(),
    workflow_runs.c.started_position,
    workflow_runs.c.run_id,
)


def queued(
    conn: Connection, key: Key, n: int | None = None, skip_locked: bool = False
) -> list[Any]:
    """The key's queued runs in the order they start: priority, then oldest."""
    c = workflow_runs.c
    q = (
        select(workflow_runs)
        .where(_of(key), c.status == RunStatus.QUEUED, c.paused_by.is_(None))
        .order_by(*_START_ORDER)
    )
    if n is not None:
        q = q.limit(n)
    if not db.is_sqlite(conn):
        q = q.with_for_update(skip_locked=skip_locked)
    return list(conn.execute(q))


def lock_keys(conn: Connection, keys: Sequence[Key]) -> None:
    """`lock_key` for many keys at once: one insert of the missing rows, one
    locking read, in key order (every locker of several keys orders them so)."""
    hold_append_lock(conn)
    ordered = sorted(set(keys))
    c = workflow_slot_keys.c
    sql.insert_ignore_many(
        conn,
        workflow_slot_keys,
        [dict(tenant_id=t, workflow_name=w, concurrency_key=k) for t, w, k in ordered],
        ["tenant_id", "workflow_name", "concurrency_key"],
    )
    if not db.is_sqlite(conn):
        conn.execute(
            select(c.tenant_id)
            .where(tuple_(c.tenant_id, c.workflow_name, c.concurrency_key).in_(ordered))
            .order_by(c.tenant_id, c.workflow_name, c.concurrency_key)
            .with_for_update()
        )


def admit_many(
    conn: Connection, wanted: Sequence[tuple[Key, Limit]], behind_queue: bool = True
) -> list[bool]:
    """`admits` for a batch of new triggers, in their order: each key locked
    once, its holders counted and its queue checked once for all of them
    (four statements whatever the batch), then the first free-slot-many of a
    key start and the rest queue. `behind_queue=False` (resumes of
    `slot="active"` runs): a free slot is taken whoever is queued."""
    keys = sorted({key for key, _ in wanted})
    if not keys:
        return []
    lock_keys(conn, keys)
    c = workflow_runs.c
    of = tuple_(c.tenant_id, c.workflow_name, c.concurrency_key).in_(keys)
    counts = conn.execute(
        select(c.tenant_id, c.workflow_name, c.concurrency_key, c.status, func.count())
        .where(of, c.status.in_(HOLDING))
        .group_by(c.tenant_id, c.workflow_name, c.concurrency_key, c.status)
    ).all()
    limits = dict(wanted)
    held = Counter[Key]()
    for t, w, k, status, n in counts:
        if status in holding(limits[(t, w, k)]):
            held[(t, w, k)] += n
    waiting: set[Key] = set()
    if behind_queue:
        waiting = {
            (t, w, k)
            for t, w, k in conn.execute(
                select(c.tenant_id, c.workflow_name, c.concurrency_key)
                .where(of, c.status == RunStatus.QUEUED, c.paused_by.is_(None))
                .distinct()
            )
        }
    out = []
    for key, limit in wanted:
        ok = key not in waiting and held[key] < limit.max
        if ok:
            held[key] += 1
        else:
            waiting.add(key)  # one queued: the later ones of the batch queue behind it
        out.append(ok)
    return out


def open_counts(conn: Connection, tenant_id: str, workflow: str) -> tuple[int, int]:
    """(holding a slot, queued): the open runs of a workflow in a tenant, any key."""
    c = workflow_runs.c
    q = (
        select(c.status, func.count())
        .where(c.tenant_id == tenant_id, c.workflow_name == workflow, c.status.in_(ev.OPEN))
        .group_by(c.status)
    )
    counts = {status: int(n) for status, n in conn.execute(q)}
    return sum(counts.get(s, 0) for s in HOLDING), counts.get(RunStatus.QUEUED, 0)


def admits(conn: Connection, key: Key, limit: Limit) -> bool:
    """For a new trigger (the key locked here, until commit): may it start now?"""
    lock_key(conn, key)
    return holders(conn, key, limit) < limit.max and not queued(conn, key, 1)


def refill(conn: Connection, key: Key) -> list[str]:
    """Start queued runs of the key while slots are free; their run ids. A
    registered workflow without a limit any more (a deploy removed it, or
    set a cron workflow's overlap to "allow") starts all of them."""
    wf = _starting(key[1])
    if wf is None or key[2] is None:  # no key: a paused workflow's run, started by its resume
        return []
    limit = wf.slot_limit
    lock_key(conn, key)
    free = None if limit is None else limit.max - holders(conn, key, limit)
    if free is not None and free <= 0:
        return []
    if limit is not None and free is not None and limit.slot == "active":
        free -= pending.release_held(conn, key, free)  # runs waiting to resume go first
    if free is not None and free <= 0:
        return []
    started = []
    for row in queued(conn, key, free, skip_locked=True):
        stream = StreamId(row.tenant_id, ev.AGGREGATE_TYPE, row.run_id)
        append(conn, stream, [NewEvent(ev.RUN_STARTED, ev.started_from(row))], row.version)
        started.append(row.run_id)
    start_signal.signal(conn, key[0], started)
    return started


def after_settle(conn: Connection, settled: Sequence[Event], active_only: bool = False) -> None:
    """Runs of limited workflows settled in this transaction (or, with
    `active_only`, runs of `slot="active"` workflows that suspended): refill
    their keys just before it commits (one read, only when such a workflow
    exists)."""
    names = {str(e.payload.get("workflowName")) for e in settled}
    limits = [limit_for(n) for n in names]
    if not any(lim is not None and (lim.slot == "active" or not active_only) for lim in limits):
        return
    c = workflow_runs.c
    ids = sorted({e.aggregate_id for e in settled})
    rows = conn.execute(
        select(c.tenant_id, c.workflow_name, c.concurrency_key).where(
            c.run_id.in_(ids), c.concurrency_key.is_not(None)
        )
    )
    scope = db.tx_scope(conn)
    keys = scope.get(_REFILLS)
    if keys is None:
        keys = scope[_REFILLS] = set()
        db.before_commit(conn, functools.partial(_refill_keys, conn))
    keys.update((tenant_id, workflow, ckey) for tenant_id, workflow, ckey in rows)


_REFILLS = "workflows.refills"


def _refill_keys(conn: Connection) -> None:
    """Refill the keys this transaction freed slots of, just before it
    commits: those with queued runs, found in one read (a limit that is
    never reached costs that read, not a lock and two counts per key), and
    every key of a `slot="active"` limit (its held resumes). Safe without the
    keys' locks: this transaction takes the append lock first, which every
    admission that queues a run takes before it, so none is in flight."""
    keys = sorted(db.tx_scope(conn).pop(_REFILLS, set()))
    if not keys:
        return
    hold_append_lock(conn)
    c = workflow_runs.c
    waiting = {
        (t, w, k)
        for t, w, k in conn.execute(
            select(c.tenant_id, c.workflow_name, c.concurrency_key)
            .where(
                tuple_(c.tenant_id, c.workflow_name, c.concurrency_key).in_(keys),
                c.status == RunStatus.QUEUED,
            )
            .distinct()
        )
    }
    for key in keys:
        limit = limit_for(key[1])
        if key in waiting or (limit is not None and limit.slot == "active"):
            refill(conn, key)


def keys_with_queued(conn: Connection, tenant_id: str) -> list[Key]:
    """Keys with queued runs, or with runs waiting for a slot to resume."""
    c = workflow_runs.c
    q = (
        select(c.tenant_id, c.workflow_name, c.concurrency_key)
        .where(c.tenant_id == tenant_id, c.status == RunStatus.QUEUED)
        .distinct()
    )
    return sorted({(t, w, k) for t, w, k in conn.execute(q)} | pending.held_keys(conn, tenant_id))


def queue_position(conn: Connection, row: Any) -> int | None:
    """1 for the next queued run of its key, ...; None when not queued."""
    return queue_positions(conn, [row]).get(row.run_id)


def queue_positions(conn: Connection, rows: Sequence[Any]) -> dict[str, int]:
    """Where each queued run of `rows` stands in its key's start order (1:
    next), in one statement however many keys: {run_id: position}."""
    mine = [r for r in rows if r.status == RunStatus.QUEUED and r.concurrency_key is not None]
    if not mine:
        return {}
    c = workflow_runs.c
    keys = {(r.tenant_id, r.workflow_name, r.concurrency_key) for r in mine}
    place = func.row_number().over(
        partition_by=(c.tenant_id, c.workflow_name, c.concurrency_key), order_by=_START_ORDER
    )
    ranked = (
        select(c.run_id, place.label("position"))
        .where(c.status == RunStatus.QUEUED, or_(*(_of(k) for k in sorted(keys))))
        .subquery()
    )
    ids = [r.run_id for r in mine]
    q = select(ranked.c.run_id, ranked.c.position).where(ranked.c.run_id.in_(ids))
    return {run_id: int(pos) for run_id, pos in conn.execute(q)}
