"""Starting runs: event triggers (an async projection per workflow, from `now`)
and webhook triggers (the same, on `workflow.webhook-received`); `start_run`
serves them and cron ticks (`cron`) alike."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from webapp.core import clock, db
from webapp.eventstore import (
    Event,
    NewEvent,
    StreamId,
    VersionConflict,
    append,
    projections,
)
from webapp.workflows.definition.controls import ControlError, priority_of
from webapp.workflows.definition.model import EventTrigger, WebhookTrigger, Workflow
from webapp.workflows.engine.run_controls import with_controls
from webapp.workflows.store import batches, definitions, pauses, rates, runs, singletons
from webapp.workflows.store import run_events as ev
from webapp.workflows.triggers import deferred

log = logging.getLogger("webapp.workflows")


def projection_name(wf: Workflow) -> str:
    return f"workflow-{wf.name}"


Slot = tuple[str, int]  # (concurrency key, priority) of a limited workflow's run


def slot_of(wf: Workflow, trigger: Event) -> Slot | None:
    """The run's concurrency key and priority (ControlError: a function of
    the workflow gave a wrong value); None when the workflow has no limit."""
    limit = wf.slot_limit
    if limit is None:
        return None
    return limit.key_for(trigger), priority_of(wf.priority, trigger)


def start_run(
    conn: Connection,
    wf: Workflow,
    tenant_id: str,
    trigger: Event,
    key: str | None,
    slot: Slot | None = None,
) -> str | None:
    """Append run-started for `trigger` and ask a worker to run it (after commit).

    Returns the run id, or None when nothing started: a concurrent trigger with
    the same key won the stream's expected version, or (on_duplicate="ignore")
    the key's run is still open. A run without a key cannot conflict: its
    run-started joins one append just before the transaction commits, so a
    projection batch does not hold the append lock while it works. A run of a
    limited workflow (`slot`) starts only when its key has a free slot and
    nobody queued before it, decided just before commit; else it is queued
    (run-queued), as is every new run of a paused workflow. A throttled,
    rate-limited or debounced one is decided just before commit too
    (`triggers.rates`): the id returned is then the run it would be.
    """
    rate_key = wf.rates.key_for(trigger)  # ControlError: its key function failed
    started = ev.run_started(wf.name, trigger.type, trigger.ref, wf.fingerprint, key, wf.version)
    definitions.record(conn, wf)
    paused = pauses.is_paused(conn, wf.name)
    if wf.batch is not None or wf.singleton is not None:
        return _controlled(conn, wf, tenant_id, trigger, started, paused)
    if key is None and slot is None and not paused and rate_key is None:
        run_id = ev.run_id_for(wf.name, None)
        deferred.defer(
            conn, tenant_id, run_id, with_controls(wf, tenant_id, run_id, trigger, started)
        )
        return run_id
    found = _keyed(conn, wf, tenant_id, trigger, key)
    if found is None:
        return None
    run_id, expected = found
    started = with_controls(wf, tenant_id, run_id, trigger, started)
    if rate_key is not None:
        item = rates.Admission(
            wf, tenant_id, run_id, expected, started, trigger, rate_key, paused, key, slot
        )
        rates.defer(conn, item)
        return run_id
    event_type = ev.RUN_STARTED
    limit = wf.slot_limit
    if slot is not None and limit is not None:
        started = ev.with_slot(started, *slot)
        if not paused:  # admitted just before commit, like the deferred starts
            key_of = (tenant_id, wf.name, slot[0])
            deferred.defer_admission(conn, (tenant_id, run_id, expected, started, key_of, limit))
            return run_id
    if paused:  # a paused workflow queues its new runs until it resumes
        event_type = ev.RUN_QUEUED
        started = {**started, "paused": True}
    try:
        with conn.begin_nested():
            append(conn, runs.stream(tenant_id, run_id), [NewEvent(event_type, started)], expected)
    except VersionConflict:
        log.info("workflow trigger lost the race for its key", extra={"run_id": run_id})
        return None
    if event_type == ev.RUN_STARTED:
        deferred.advance_after_commit(conn, tenant_id, run_id)
    return run_id


def _controlled(
    conn: Connection,
    wf: Workflow,
    tenant_id: str,
    trigger: Event,
    started: dict[str, Any],
    paused: bool,
) -> str:
    """A batched or singleton workflow's trigger: decided just before commit
    (`store.batches`, `store.singletons`); the id is the run it would open."""
    run_id = ev.run_id_for(wf.name, None)
    started = with_controls(wf, tenant_id, run_id, trigger, started)
    if wf.batch is not None:
        key = wf.batch.key_for(trigger)  # ControlError: its key function failed
        batches.defer(conn, batches.Admission(wf, tenant_id, run_id, started, trigger, key, paused))
        return run_id
    assert wf.singleton is not None
    key = wf.singleton.key_for(trigger)
    singletons.defer(
        conn, singletons.Admission(wf, tenant_id, run_id, started, trigger, key, paused)
    )
    return run_id


def skip_run(
    conn: Connection,
    wf: Workflow,
    tenant_id: str,
    trigger: Event,
    run_id: str,
    key: str | None,
    reason: str,
) -> None:
    """Record a trigger that starts nothing: a run whose one event is
    `workflow.run-skipped` (status skipped), with its trigger, `reason`
    (`ev.SKIPPED_OVERLAP`, ...) and key. The run id is the caller's (a cron
    tick's is made from name + tick)."""
    payload = ev.run_skipped(wf.name, trigger.type, trigger.ref, reason, key, wf.version)
    append(conn, runs.stream(tenant_id, run_id), [NewEvent(ev.RUN_SKIPPED, payload)], 0)


def _keyed(
    conn: Connection, wf: Workflow, tenant_id: str, trigger: Event, key: str | None
) -> tuple[str, int] | None:
    """The run id and expected stream version for a keyed run (None: ignored,
    its key's run is still open), or a fresh id for a run without a key."""
    if key is None:
        return ev.run_id_for(wf.name, None), 0
    run_id = ev.run_id_for(wf.name, key)
    row = runs.lock_run(conn, tenant_id, run_id)
    if row is not None and row.status in ev.OPEN:
        if wf.on_duplicate == "ignore":
            log.info("workflow trigger ignored: run still open", extra={"run_id": run_id})
            return None
        run_id = ev.run_id_for(wf.name, f"{key}|{trigger.id}")
        row = runs.lock_run(conn, tenant_id, run_id)
    return run_id, (row.version if row is not None else 0)


def record_trigger_failure(conn: Connection, wf: Workflow, tenant_id: str, exc: Exception) -> None:
    """A filter or key function raised: record run-failed (generic text), swallow."""
    log.warning("workflow trigger failed", extra={"workflow": wf.name}, exc_info=exc)
    run_id = ev.run_id_for(wf.name, None)
    append(
        conn,
        runs.stream(tenant_id, run_id),
        [NewEvent(ev.RUN_FAILED, ev.run_failed(wf.name, 0, ev.step_error(exc)))],
        0,
    )


def _apply_for(wf: Workflow) -> Any:
    def apply(conn: Connection, event: Event) -> None:
        try:
            if isinstance(wf.trigger, WebhookTrigger):
                if event.payload.get("workflowName") != wf.name:
                    return
            elif (
                isinstance(wf.trigger, EventTrigger)
                and wf.trigger.filter is not None
                and not wf.trigger.filter(event)
            ):
                return
            key = wf.key_for(event)
            slot = slot_of(wf, event)
        except DBAPIError:
            raise  # infrastructure: let the projection retry
        except Exception as exc:
            # Recorded and swallowed: a re-throw would redeliver the event.
            record_trigger_failure(conn, wf, event.tenant_id, exc)
            return
        try:
            start_run(conn, wf, event.tenant_id, event, key, slot)
        except ControlError as exc:  # a cancel_on match function raised
            record_trigger_failure(conn, wf, event.tenant_id, exc)

    return apply


def mount(wf: Workflow) -> None:
    if isinstance(wf.trigger, EventTrigger):
        projections.register(
            projection_name(wf), [wf.trigger.event_type], _apply_for(wf), start="now"
        )
    elif isinstance(wf.trigger, WebhookTrigger):
        projections.register(
            projection_name(wf), [ev.WEBHOOK_RECEIVED], _apply_for(wf), start="now"
        )


def unmount(wf: Workflow) -> None:
    projections.unregister(projection_name(wf))


def receive_webhook(wf: Workflow, body: Any, received_at: datetime | None = None) -> Event:
    """Record a verified webhook call; the workflow's trigger projection starts the run."""
    assert isinstance(wf.trigger, WebhookTrigger)

    with db.transaction() as conn:
        return append(
            conn,
            StreamId(wf.trigger.tenant_id, "workflow-webhook", str(uuid.uuid4())),
            [
                NewEvent(
                    ev.WEBHOOK_RECEIVED,
                    {
                        "workflowName": wf.name,
                        "path": wf.trigger.path,
                        "body": body,
                        "receivedAt": (received_at or clock.now()).isoformat(),
                    },
                )
            ],
            0,
        )[0]
