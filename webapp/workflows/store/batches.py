"""Event batching (docs/workflows.md, "Event batching"): a batched
workflow's trigger events are collected into one run per key, at most `max`
of them, for at most `within` after the first; the run then starts and reads
them in log order (`ctx.trigger_batch`). Here: a key's collecting run, a new
trigger's admission to it, the start of a full or timed-out batch, the
batch's events, and their events' payloads.

A new trigger of a batched workflow (`defer`, with its `Admission`), decided
just before its transaction commits, as the rate admissions are (the
triggers of one key in one transaction together, in log order: one lock,
one read of the collecting run, one append per batch):

- the key's collecting run (queued, below `max`) takes it: one more
  `workflow.run-batched` on that run's stream (`batchSize`: the count so
  far); the one that fills the batch also appends its `workflow.run-started`;
- with none, a new run is queued (`workflow.run-queued` with `batchKey`,
  `batchSize` 1 and `startAt`: the trigger event's time plus `within`),
  whose START row below step 0 starts it when due (`start_due`, asked by the
  claim, `engine.resume`), like a throttled run's planned start.

Exactly once: every decision on a key (an admission, a due start) takes the
event store's append lock, then the key's `workflow_slot_keys` row (named
"batch|<key>"), then reads the key's collecting run; so decisions on one key
are serial in every process, and an event joins a batch only in the
transaction that moves its trigger projection's cursor past it. A worker
killed before that commit leaves neither; the event is read again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import clock, db
from webapp.eventstore import (
    Event,
    NewEvent,
    StreamId,
    VersionConflict,
    append,
    get_events,
)
from webapp.eventstore.tables import events
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs, slots, start_signal
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.store.tables import workflow_runs

Key = tuple[str, str, str]  # (tenant, workflow, batch key)


def lock(conn: Connection, key: Key) -> None:
    """Serialise the decisions on this batch key (after the append lock)."""
    tenant_id, workflow, bkey = key
    name = (
        f"batch|{bkey}"
        if len(bkey) <= 190
        else "batch|#" + hashlib.sha256(bkey.encode()).hexdigest()
    )
    slots.lock_key(conn, (tenant_id, workflow, name))


def collecting(conn: Connection, key: Key) -> Any:
    """The key's newest queued run (the key locked), or None: the batch that
    is still collecting, unless it is full (a paused workflow's full batch
    stays queued until it resumes)."""
    c = workflow_runs.c
    q = select(workflow_runs).where(
        c.tenant_id == key[0],
        c.workflow_name == key[1],
        c.rate_key == key[2],
        c.status == RunStatus.QUEUED,
    )
    return conn.execute(q.order_by(c.started_position.desc()).limit(1)).first()


def size_of(conn: Connection, row: Any) -> int:
    """How many events a queued batch holds: its last run-batched's (or its
    run-queued's) `batchSize`."""
    e = events.c
    q = (
        select(e.payload)
        .where(
            e.tenant_id == row.tenant_id,
            e.aggregate_type == ev.AGGREGATE_TYPE,
            e.aggregate_id == row.run_id,
            e.type.in_((ev.RUN_QUEUED, ev.RUN_BATCHED)),
        )
        .order_by(e.version.desc())
        .limit(1)
    )
    last = conn.execute(q).scalar()
    return int(last.get("batchSize", 1)) if last else 1


def started(row: Any, size: int) -> dict[str, Any]:
    """A batch's run-started, from its runs row: its key and size."""
    payload = {k: v for k, v in ev.started_from(row).items() if k != "rateKey"}
    return {**payload, "batchKey": row.rate_key or "", "batchSize": size}


def start_due(conn: Connection, row: Any) -> bool:
    """A batch's window ended (its START row due, its runs row locked):
    start it with the events it holds, unless a full batch already started
    it. True when it started."""
    key = (row.tenant_id, row.workflow_name, row.rate_key or "")
    lock(conn, key)
    fresh = runs.lock_run(conn, row.tenant_id, row.run_id)  # as the key's last writer left it
    if fresh is None or fresh.status != RunStatus.QUEUED or fresh.paused_by is not None:
        return False
    payload = started(fresh, size_of(conn, fresh))
    append(
        conn,
        runs.stream(row.tenant_id, row.run_id),
        [NewEvent(ev.RUN_STARTED, payload)],
        fresh.version,
    )
    start_signal.signal(conn, row.tenant_id, [row.run_id])
    return True


def is_batched(wf: Workflow | None) -> bool:
    """Does this definition collect its triggers into batches (the claim
    then starts a due queued run here, not by its rate window)?"""
    return wf is not None and wf.batch is not None


# -- a batch's events ------------------------------------------------------------

_HOLDS = (ev.RUN_QUEUED, ev.RUN_BATCHED, ev.RUN_STARTED)


def refs_of(conn: Connection, tenant_id: str, run_id: str) -> list[dict[str, Any]]:
    """The trigger references a run's batch took, in the order it took them."""
    e = events.c
    q = (
        select(e.type, e.payload)
        .where(
            e.tenant_id == tenant_id,
            e.aggregate_type == ev.AGGREGATE_TYPE,
            e.aggregate_id == run_id,
            e.type.in_(_HOLDS),
        )
        .order_by(e.version)
    )
    return _refs((r.type, r.payload) for r in conn.execute(q))


def _refs(typed: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The trigger references of a run's events (type, payload), in order:
    its run-queued's, each run-batched's; a run-started only repeats them."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for type_, payload in typed:
        if type_ not in _HOLDS:
            continue
        if type_ == ev.RUN_STARTED and out:
            break
        ref = payload.get("triggerEventRef") or {}
        if ref.get("eventId") and ref["eventId"] not in seen:
            seen.add(ref["eventId"])
            out.append(ref)
    return out


def events_of(conn: Connection, tenant_id: str, run_id: str) -> tuple[Event, ...]:
    """The events of a run's batch, in log order (those still stored)."""
    ids = [str(r["eventId"]) for r in refs_of(conn, tenant_id, run_id)]
    found = get_events(conn, ids)
    return tuple(sorted(found.values(), key=lambda x: x.position))


def trigger_batch(tenant_id: str, run_id: str) -> tuple[Event, ...]:
    """`ctx.trigger_batch` of a batched run, read when it runs."""
    with db.reading() as conn:
        return events_of(conn, tenant_id, run_id)


def describe(conn: Connection, timeline: list[Event]) -> dict[str, Any] | None:
    """A batched run for operators, from its events: its key, how many
    events it holds and which (None: the run is not a batch)."""
    if not timeline or "batchKey" not in _first_start(timeline):
        return None
    refs = _refs((e.type, e.payload) for e in timeline)
    found = get_events(conn, [str(r["eventId"]) for r in refs])
    listed = sorted(found.values(), key=lambda x: x.position)
    return {
        "key": _first_start(timeline)["batchKey"],
        "count": len(refs),
        "events": [
            {"eventId": x.id, "type": x.type, "position": x.position, "aggregateId": x.aggregate_id}
            for x in listed
        ],
    }


def _first_start(timeline: list[Event]) -> dict[str, Any]:
    return next((e.payload for e in timeline if e.type in _HOLDS), {})


def run_batched(workflow_name: str, trigger: Event, size: int) -> dict[str, Any]:
    """One more trigger event joined the collecting batch (`batchSize`: now)."""
    return {
        "workflowName": workflow_name,
        "triggerEventType": trigger.type,
        "triggerEventRef": trigger.ref,
        "batchSize": size,
    }


# -- a new trigger of a batched workflow -------------------------------------------

_ITEMS = "workflows.batch_admissions"
_ATTEMPTS = 5  # a collecting run changed under the admission (an operator): read again


@dataclass(frozen=True)
class Admission:
    wf: Workflow
    tenant_id: str
    run_id: str  # the new run's id, should the trigger open a batch
    payload: dict[str, Any]  # its run-queued as it would be, controls included
    trigger: Event
    key: str
    paused: bool


def defer(conn: Connection, item: Admission) -> None:
    """Decide this trigger just before commit, after the ones before it."""
    db.collect_before_commit(conn, _ITEMS, item, lambda items: _flush(conn, items))


def _flush(conn: Connection, items: list[Admission]) -> None:
    """Each key's triggers of this transaction, in order, decided together:
    one lock, one read of its collecting run and one append per batch
    (not per event)."""
    groups: dict[tuple[str, str, str], list[Admission]] = {}
    for a in items:
        groups.setdefault((a.tenant_id, a.wf.name, a.key), []).append(a)
    # The collecting runs' rows first, in run id order, before any key lock:
    # the order a claim starting one of them takes them (its rows, then the
    # key), so a due start and a joining event never wait on each other.
    by_tenant: dict[str, list[str]] = {}
    for key in groups:
        seen = collecting(conn, key)
        if seen is not None:
            by_tenant.setdefault(key[0], []).append(seen.run_id)
    for tenant_id, run_ids in by_tenant.items():
        runs.lock_runs(conn, tenant_id, sorted(run_ids))
    started_ids: dict[str, list[str]] = {}
    for items in groups.values():
        for attempt in range(_ATTEMPTS):
            try:
                with conn.begin_nested():
                    ids = admit(conn, items)
            except VersionConflict:
                if attempt == _ATTEMPTS - 1:
                    raise  # the trigger batch rolls back and is read again: nothing is lost
                continue
            started_ids.setdefault(items[0].tenant_id, []).extend(ids)
            break
    for tenant_id, ids in started_ids.items():
        if ids:
            start_signal.signal(conn, tenant_id, ids)


def admit(conn: Connection, items: list[Admission]) -> list[str]:
    """Append what these triggers of one key do, in log order: they fill
    the key's collecting run, then open new batches of at most `max`. The
    ids of the batches that started now (they are full)."""
    first = items[0]
    batch = first.wf.batch
    assert batch is not None
    key = (first.tenant_id, first.wf.name, first.key)
    lock(conn, key)
    row = collecting(conn, key)
    size = size_of(conn, row) if row is not None else 0
    out: list[str] = []
    rest = list(items)
    if row is not None and size < batch.max:
        take, rest = rest[: batch.max - size], rest[batch.max - size :]
        new = [
            NewEvent(ev.RUN_BATCHED, run_batched(a.wf.name, a.trigger, size + n))
            for n, a in enumerate(take, 1)
        ]
        size += len(take)
        new += _when_full(first.wf.name, size >= batch.max, row.paused_by, started(row, size))
        append(conn, runs.stream(first.tenant_id, row.run_id), new, row.version)
        if size >= batch.max and row.paused_by is None:
            out.append(row.run_id)
    while rest:
        take, rest = rest[: batch.max], rest[batch.max :]
        if _open(conn, take, batch.max, batch.within):
            out.append(take[0].run_id)
    return out


def _open(conn: Connection, take: list[Admission], most: int, within: Any) -> bool:
    """A new batch of these triggers (at most `most`); True when it started."""
    a = take[0]
    payload = {**a.payload, "batchKey": a.key, "batchSize": 1}
    stream = StreamId(a.tenant_id, ev.AGGREGATE_TYPE, a.run_id)
    if most == 1 and not a.paused:  # nothing to collect: it starts at once
        append(conn, stream, [NewEvent(ev.RUN_STARTED, payload)], 0)
        return True
    if a.paused:
        payload["paused"] = True
    # it collects until full, or `within` after its first event
    payload["startAt"] = (a.trigger.recorded_at + within).isoformat()
    new = [NewEvent(ev.RUN_QUEUED, payload)]
    new += [
        NewEvent(ev.RUN_BATCHED, run_batched(x.wf.name, x.trigger, n))
        for n, x in enumerate(take[1:], 2)
    ]
    full = len(take) >= most
    paused_by = "workflow" if a.paused else None
    new += _when_full(a.wf.name, full, paused_by, _started_from_queued(payload, len(take)))
    append(conn, stream, new, 0)
    return full and not a.paused


def _when_full(
    name: str, full: bool, paused_by: str | None, start: dict[str, Any]
) -> list[NewEvent]:
    """What a batch that just filled appends: its run-started; a paused one
    instead moves its start to now (run-delayed), so it starts as soon as it
    is resumed, not at its window's end."""
    if not full:
        return []
    if paused_by is None:
        return [NewEvent(ev.RUN_STARTED, start)]
    moved = {"workflowName": name, "startAt": clock.now().isoformat(), "full": True}
    return [NewEvent(ev.RUN_DELAYED, moved)]


def _started_from_queued(p: dict[str, Any], size: int) -> dict[str, Any]:
    """The run-started of a batch opened and filled in one append (as
    `started` would give from its runs row)."""
    payload = ev.run_started(
        p["workflowName"],
        p["triggerEventType"],
        p["triggerEventRef"],
        p["definitionFingerprint"],
        p.get("idempotencyKey"),
        int(p.get("definitionVersion", 1)),
    )
    return {**payload, "batchKey": p["batchKey"], "batchSize": size}
