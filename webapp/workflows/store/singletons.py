"""Singleton runs (docs/workflows.md, "Singleton runs"): at most one open run
per (tenant, workflow, singleton key). Here: a key's open runs, a new
trigger's admission (skip it, or cancel the open run and start the new one),
and their events' payloads.

A new trigger of a singleton workflow (`defer`, with its `Admission`) is
decided just before its transaction commits, as the rate admissions are:

- no open run of its key: it starts (`workflow.run-started` with
  `singletonKey`; queued if its workflow is paused);
- `mode="skip"`: it starts nothing: a run whose one event is
  `workflow.run-skipped` with reason "singleton";
- `mode="replace"`: the open run is cancelled (`workflow.run-cancelled`,
  reason "replaced", `replacedBy`: the new run's id) and the new one starts,
  in that one transaction, the cancel first in the log.

Every decision on a key takes the event store's append lock, then the key's
`workflow_slot_keys` row (named "singleton|<key>"), then reads the key's open
runs: decisions on one key are serial in every process, so at no position of
the event log are two runs of a key open.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import db
from webapp.eventstore import Event, NewEvent, VersionConflict, append
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs, slots, start_signal
from webapp.workflows.store.tables import workflow_runs

Key = tuple[str, str, str]  # (tenant, workflow, singleton key)


def lock(conn: Connection, key: Key) -> None:
    """Serialise the decisions on this singleton key (after the append lock)."""
    tenant_id, workflow, skey = key
    name = (
        f"singleton|{skey}"
        if len(skey) <= 180
        else "singleton|#" + hashlib.sha256(skey.encode()).hexdigest()
    )
    slots.lock_key(conn, (tenant_id, workflow, name))


def open_runs(conn: Connection, key: Key) -> list[str]:
    """The ids of the key's open runs (the key locked), oldest first."""
    c = workflow_runs.c
    q = select(c.run_id).where(
        c.tenant_id == key[0],
        c.workflow_name == key[1],
        c.rate_key == key[2],
        c.status.in_(ev.OPEN),
    )
    return list(conn.execute(q.order_by(c.started_position)).scalars())


def run_replaced(workflow_name: str, step_index: int, by: str) -> dict[str, Any]:
    """run-cancelled of the open run a new trigger replaced (`replacedBy`)."""
    return {
        "workflowName": workflow_name,
        "stepIndex": step_index,
        "reason": ev.REASON_REPLACED,
        "replacedBy": by,
    }


def describe(timeline: list[Event]) -> dict[str, Any] | None:
    """A singleton workflow's run for operators, from its events: its key,
    the runs it replaced, the run that replaced it, or (skipped) the open
    run it found. None: not a singleton's run."""
    first = timeline[0].payload if timeline else {}
    if "singletonKey" not in first:
        return None
    out: dict[str, Any] = {
        "key": first["singletonKey"],
        "replaces": list(first.get("replaces") or []),
        "replacedBy": None,
        "skippedFor": first.get("openRun"),
    }
    for e in timeline:
        if e.type == ev.RUN_CANCELLED and e.payload.get("reason") == ev.REASON_REPLACED:
            out["replacedBy"] = e.payload.get("replacedBy")
    return out


# -- a new trigger of a singleton workflow -----------------------------------------

_ITEMS = "workflows.singleton_admissions"
_ATTEMPTS = 5  # the open run moved under the decision (its worker committed): read again


@dataclass(frozen=True)
class Admission:
    wf: Workflow
    tenant_id: str
    run_id: str
    payload: dict[str, Any]  # run-started as it would be, controls included
    trigger: Event
    key: str
    paused: bool


def defer(conn: Connection, item: Admission) -> None:
    """Decide this trigger just before commit, after the ones before it."""
    db.collect_before_commit(conn, _ITEMS, item, lambda items: _flush(conn, items))


def _flush(conn: Connection, items: list[Admission]) -> None:
    started: dict[str, list[str]] = {}
    for a in items:
        for attempt in range(_ATTEMPTS):
            try:
                with conn.begin_nested():
                    began = admit(conn, a)
            except VersionConflict:
                if attempt == _ATTEMPTS - 1:
                    raise  # the trigger batch rolls back and is read again
                continue
            if began:
                started.setdefault(a.tenant_id, []).append(a.run_id)
            break
    for tenant_id, ids in started.items():
        start_signal.signal(conn, tenant_id, ids)


def admit(conn: Connection, a: Admission) -> bool:
    """Append what the trigger does; True when its run started now."""
    singleton = a.wf.singleton
    assert singleton is not None
    key = (a.tenant_id, a.wf.name, a.key)
    lock(conn, key)
    open_ids = open_runs(conn, key)
    if open_ids and singleton.mode == "skip":
        payload = ev.run_skipped(
            a.wf.name, a.trigger.type, a.trigger.ref, ev.SKIPPED_SINGLETON, None, a.wf.version
        )
        payload = {**payload, "singletonKey": a.key, "openRun": open_ids[0]}
        append(conn, runs.stream(a.tenant_id, a.run_id), [NewEvent(ev.RUN_SKIPPED, payload)], 0)
        return False
    replaced: list[str] = []
    for run_id in open_ids:  # replace: each open run (one, by this rule) is cancelled first
        row = runs.lock_run(conn, a.tenant_id, run_id)
        if row is None or row.status not in ev.OPEN:
            continue
        cancel = run_replaced(row.workflow_name, row.step_index, a.run_id)
        runs.append_run_event(conn, row, ev.RUN_CANCELLED, cancel)
        replaced.append(run_id)
    payload = {**a.payload, "singletonKey": a.key}
    if replaced:
        payload["replaces"] = replaced
    event_type = ev.RUN_STARTED
    if a.paused:  # a paused workflow queues its new runs until it resumes
        event_type = ev.RUN_QUEUED
        payload["paused"] = True
    append(conn, runs.stream(a.tenant_id, a.run_id), [NewEvent(event_type, payload)], 0)
    return event_type == ev.RUN_STARTED
