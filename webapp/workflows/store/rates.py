"""Throttle, rate limit and debounce in the store: the runs of one (tenant,
workflow, rate key) in a window, read under that key's lock, and the start
of a queued run whose planned start came.

Every decision on a key (a trigger's admission, a planned start) takes the
event store's append lock, then the key's `workflow_slot_keys` row (named
"rate|<key>", beside the concurrency keys: `slots.lock_key`), then reads the
key's runs: so decisions on one key are serial, in every process. A run's
`started_at` is when it started, or, while it is queued, when it plans to
(its START row's time, `startAt`); the window is exact and sliding: a run
starts only while fewer than `count` runs of its key started in the `per`
before it.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import clock, db
from webapp.eventstore import NewEvent, StreamId, append, event_at
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import Workflow
from webapp.workflows.definition.rates import Rate
from webapp.workflows.store import rate_events, slots, start_signal
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

Key = tuple[str, str, str]  # (tenant, workflow, rate key)


def key_of(row: Any) -> Key:
    return (row.tenant_id, row.workflow_name, row.rate_key or "")


def lock(conn: Connection, key: Key) -> None:
    """Serialise the decisions on this rate key (after the append lock)."""
    tenant_id, workflow, rkey = key
    name = (
        f"rate|{rkey}" if len(rkey) <= 190 else "rate|#" + hashlib.sha256(rkey.encode()).hexdigest()
    )
    slots.lock_key(conn, (tenant_id, workflow, name))


def _of(key: Key) -> Any:
    c = workflow_runs.c
    return (c.tenant_id == key[0]) & (c.workflow_name == key[1]) & (c.rate_key == key[2])


def recent(conn: Connection, key: Key, since: datetime) -> tuple[list[datetime], list[datetime]]:
    """(start times after `since` of the key's runs that started, planned
    start times of its queued runs), each sorted. Skipped runs never count.
    Two reads, each a range of an index: a key's history is never scanned."""
    c = workflow_runs.c
    q = select(c.started_at).where(
        _of(key),
        c.started_at > since,
        c.status.not_in((RunStatus.QUEUED, RunStatus.SKIPPED)),
    )
    started = sorted(conn.execute(q).scalars())
    queued = select(c.started_at).where(
        c.tenant_id == key[0],
        c.workflow_name == key[1],
        c.status == RunStatus.QUEUED,
        c.rate_key == key[2],
    )
    return started, sorted(conn.execute(queued).scalars())


def plan_throttled(conn: Connection, key: Key, rate: Rate, now: datetime) -> datetime | None:
    """A new trigger's start (the key locked): None to start now, else when.
    Behind every run queued before it, at the earliest instant its window
    holds fewer than `count` starts, planned ones included."""
    started, planned = recent(conn, key, now - rate.per)
    if not planned and len(started) < rate.count:
        return None
    times = sorted(started + planned)
    if len(times) < rate.count:
        return now
    return max(now, times[-rate.count] + rate.per)


def over_limit(conn: Connection, key: Key, rate: Rate, now: datetime) -> bool:
    """Has the key's rate limit window no room for another run (the key locked)?"""
    started, planned = recent(conn, key, now - rate.per)
    return len(started) + len(planned) >= rate.count


def debouncing(conn: Connection, key: Key) -> Any:
    """The key's queued (debouncing) run, locked, or None."""
    c = workflow_runs.c
    q = select(workflow_runs).where(_of(key), c.status == RunStatus.QUEUED)
    q = q.order_by(c.started_position).limit(1)
    if not db.is_sqlite(conn):
        q = q.with_for_update()
    return conn.execute(q).first()


def start_by(conn: Connection, row: Any) -> datetime | None:
    """A debouncing run's latest start (`startBy` of its run-queued), if any."""
    found = event_at(conn, int(row.started_position))
    if (
        found is None
        or (found.tenant_id, found.aggregate_id) != (row.tenant_id, row.run_id)
        or found.type != ev.RUN_QUEUED
    ):
        return None
    at = found.payload.get("startBy")
    return datetime.fromisoformat(at) if at else None


def in_force(name: str) -> Workflow | None:
    """The definition new triggers start (else the highest version registered)."""
    wf = catalog.get(name)
    if wf is None:
        versions = catalog.versions(name)
        wf = versions[-1] if versions else None
    return wf


def start_due(conn: Connection, row: Any) -> bool:
    """A queued run's planned start came (its runs row locked): start it,
    unless its throttle window filled meanwhile (it fired late, after
    others): then it moves to the earliest instant the window allows
    (run-delayed). True when it started."""
    key = key_of(row)
    lock(conn, key)
    wf = in_force(row.workflow_name)
    throttle = wf.throttle if wf is not None else None
    stream = StreamId(row.tenant_id, ev.AGGREGATE_TYPE, row.run_id)
    if throttle is not None:
        now = clock.now()
        started, _ = recent(conn, key, now - throttle.per)
        if len(started) >= throttle.count:
            at = (started[-throttle.count] + throttle.per).isoformat()
            payload = rate_events.run_delayed(row.workflow_name, at)
            append(conn, stream, [NewEvent(ev.RUN_DELAYED, payload)], row.version)
            return False
    payload = ev.started_from(row)
    append(conn, stream, [NewEvent(ev.RUN_STARTED, payload)], row.version)
    start_signal.signal(conn, row.tenant_id, [row.run_id])
    return True


def has_planned_start(conn: Connection, row: Any) -> bool:
    """Does the queued run wait for its START row (throttled or debounced)?"""
    p = workflow_run_pending.c
    q = select(p.run_id).where(
        p.tenant_id == row.tenant_id, p.run_id == row.run_id, p.step_index == ev.START_STEP
    )
    return conn.execute(q).first() is not None
