"""Throttle, rate limit and debounce (docs/workflows.md, "Throttle", "Rate
limit", "Debounce"): the runs of one (tenant, workflow, rate key) in a
window, read under that key's lock; a new trigger's admission, decided just
before its transaction commits (as the concurrency admissions are); the
start of a queued run whose planned start came; and their events' payloads.

A new trigger of such a workflow (`defer`, with its `Admission`):

- debounce: a run of the key still debouncing (queued) takes the trigger
  as its own and starts later (`workflow.run-debounced`); else a new run is
  queued to start after the quiet period (`workflow.run-queued`, `startAt`);
- rate limit: with its window full, the trigger starts nothing: a run with
  the one event `workflow.run-skipped` (reason "rate_limit");
- throttle: it starts now while its window has room and nobody is queued
  before it, else it is queued to start when the window allows.

A queued run's START row (below step 0) starts it when due (`start_due`,
asked by the claim, `engine.resume`). What the definition says is pure and
lives apart (`definition.rates`).

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
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import clock, db
from webapp.eventstore import Event, NewEvent, StreamId, VersionConflict, append, event_at
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import Workflow
from webapp.workflows.definition.rates import Rate
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs, slots, start_signal
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
            payload = run_delayed(row.workflow_name, at)
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


# -- the rate events -------------------------------------------------------------


def with_rate(payload: dict[str, Any], key: str, start_at: str | None = None) -> dict[str, Any]:
    """run-started or run-queued of a throttled, rate-limited or debounced
    workflow: its `rateKey` ("" without a key function); a queued one also
    its planned start (`startAt`), the time of its START row."""
    out = {**payload, "rateKey": key}
    if start_at is not None:
        out["startAt"] = start_at
    return out


def run_debounced(
    workflow_name: str, trigger_event_type: str, trigger_ref: dict[str, Any], start_at: str
) -> dict[str, Any]:
    """A new trigger of a debouncing run's key: it becomes the run's trigger,
    and the run now starts at `startAt`."""
    return {
        "workflowName": workflow_name,
        "triggerEventType": trigger_event_type,
        "triggerEventRef": trigger_ref,
        "startAt": start_at,
    }


def run_delayed(workflow_name: str, start_at: str) -> dict[str, Any]:
    """A throttled run's planned start came while its window was full (it
    fired late, after others): it now starts at `startAt`."""
    return {"workflowName": workflow_name, "startAt": start_at}


# -- a new trigger of a rate-controlled workflow ---------------------------------


log = logging.getLogger("webapp.workflows")

_ITEMS = "workflows.rate_admissions"


@dataclass(frozen=True)
class Admission:
    wf: Workflow
    tenant_id: str
    run_id: str
    expected: int
    payload: dict[str, Any]  # run-started as it would be, controls included
    trigger: Event
    key: str
    paused: bool
    idempotency_key: str | None
    slot: tuple[str, int] | None = None  # a rate-limited workflow's concurrency key, priority


def defer(conn: Connection, item: Admission) -> None:
    """Decide this trigger just before commit: the key's lock is then held
    only for the commit, not for the rest of the trigger batch."""
    db.collect_before_commit(conn, _ITEMS, item, lambda items: _flush(conn, items))


def _flush(conn: Connection, items: list[Admission]) -> None:
    started: dict[str, list[str]] = {}
    for a in items:
        try:
            with conn.begin_nested():
                if admit(conn, a):
                    started.setdefault(a.tenant_id, []).append(a.run_id)
        except VersionConflict:
            log.info("workflow trigger lost the race for its key", extra={"run_id": a.run_id})
    for tenant_id, ids in started.items():
        start_signal.signal(conn, tenant_id, ids)


def admit(conn: Connection, a: Admission) -> bool:
    """Append what the trigger does; True when its run started now."""
    key = (a.tenant_id, a.wf.name, a.key)
    lock(conn, key)
    now = clock.now()
    control = a.wf.rates
    if control.debounce is not None:
        row = debouncing(conn, key)
        if row is not None:
            _debounce(conn, a, row, now)
            return False
    if control.rate_limit is not None and over_limit(conn, key, control.rate_limit, now):
        payload = ev.run_skipped(
            a.wf.name,
            a.trigger.type,
            a.trigger.ref,
            ev.SKIPPED_RATE_LIMIT,
            a.idempotency_key,
            a.wf.version,
        )
        _append(conn, a, ev.RUN_SKIPPED, payload)
        return False
    payload = dict(a.payload)
    plan: datetime | None = None
    if control.debounce is not None:
        plan = now + control.debounce.period
        if control.debounce.max_wait is not None:
            payload["startBy"] = (now + control.debounce.max_wait).isoformat()
    elif control.throttle is not None:
        plan = plan_throttled(conn, key, control.throttle, now)
        if plan is None and a.paused:  # started on resume, by the window then
            plan = now
    payload = with_rate(payload, a.key, plan.isoformat() if plan else None)
    if a.paused:
        payload["paused"] = True
    event_type = ev.RUN_QUEUED if plan is not None or a.paused else ev.RUN_STARTED
    limit = a.wf.slot_limit
    if a.slot is not None and limit is not None:  # then it takes a slot
        payload = ev.with_slot(payload, *a.slot)
        limited = (a.tenant_id, a.wf.name, a.slot[0])
        if not a.paused and not slots.admits(conn, limited, limit):
            event_type = ev.RUN_QUEUED
    _append(conn, a, event_type, payload)
    return event_type == ev.RUN_STARTED


def _append(conn: Connection, a: Admission, event_type: str, payload: dict[str, Any]) -> None:
    stream = runs.stream(a.tenant_id, a.run_id)
    append(conn, stream, [NewEvent(event_type, payload)], a.expected)


def _debounce(conn: Connection, a: Admission, row: Any, now: datetime) -> None:
    """The key's debouncing run takes this trigger; its start moves to a
    quiet period from now, but never past its `startBy`."""
    debounce = a.wf.rates.debounce
    assert debounce is not None
    at = now + debounce.period
    latest = start_by(conn, row)
    if latest is not None:
        at = min(at, latest)
    payload = run_debounced(row.workflow_name, a.trigger.type, a.trigger.ref, at.isoformat())
    runs.append_run_event(conn, row, ev.RUN_DEBOUNCED, payload)
