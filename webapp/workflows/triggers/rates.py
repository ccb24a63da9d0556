"""A new trigger of a throttled, rate-limited or debounced workflow
(docs/workflows.md, "Throttle", "Rate limit", "Debounce"), decided just
before its transaction commits (as the concurrency admissions are), under
its rate key's lock (`store.rates`):

- debounce: a run of the key still debouncing (queued) takes the trigger
  as its own and starts later (`workflow.run-debounced`); else a new run is
  queued to start after the quiet period (`workflow.run-queued`, `startAt`);
- rate limit: with its window full, the trigger starts nothing: a run with
  the one event `workflow.run-skipped` (reason "rate_limit");
- throttle: it starts now while its window has room and nobody is queued
  before it, else it is queued to start when the window allows.

A queued run's START row (below step 0) starts it when due (`engine.claims`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from webapp.core import clock, db
from webapp.eventstore import Event, NewEvent, VersionConflict, append
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import rate_events, rates, runs, slots, start_signal
from webapp.workflows.store import run_events as ev

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
    scope = db.tx_scope(conn)
    items = scope.get(_ITEMS)
    if items is None:
        items = scope[_ITEMS] = []
        db.before_commit(conn, lambda: _flush(conn))
    items.append(item)


def _flush(conn: Connection) -> None:
    started: dict[str, list[str]] = {}
    for a in db.tx_scope(conn).pop(_ITEMS, []):
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
    rates.lock(conn, key)
    now = clock.now()
    control = a.wf.rates
    if control.debounce is not None:
        row = rates.debouncing(conn, key)
        if row is not None:
            _debounce(conn, a, row, now)
            return False
    if control.rate_limit is not None and rates.over_limit(conn, key, control.rate_limit, now):
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
        plan = rates.plan_throttled(conn, key, control.throttle, now)
        if plan is None and a.paused:  # started on resume, by the window then
            plan = now
    payload = rate_events.with_rate(payload, a.key, plan.isoformat() if plan else None)
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
    latest = rates.start_by(conn, row)
    if latest is not None:
        at = min(at, latest)
    payload = rate_events.run_debounced(
        row.workflow_name, a.trigger.type, a.trigger.ref, at.isoformat()
    )
    runs.append_run_event(conn, row, ev.RUN_DEBOUNCED, payload)
