"""Starting runs: event triggers (an async projection per workflow, from `now`),
webhook triggers (the same, on `workflow.webhook-received`) and cron triggers
(a per-tenant job; run id from name + tick, so a tick never starts twice)."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from webapp import clock, db
from webapp.eventstore import Event, NewEvent, StreamId, VersionConflict, append, projections
from webapp.jobs.registry import JobSpec, register_job, unregister_job
from webapp.workflows import catalog, runs
from webapp.workflows import events as ev
from webapp.workflows.model import CronTrigger, EventTrigger, WebhookTrigger, Workflow
from webapp.workflows.timers import schedule_advance

log = logging.getLogger("webapp.workflows")


def projection_name(wf: Workflow) -> str:
    return f"workflow-{wf.name}"


def cron_job_name(wf: Workflow) -> str:
    return "workflow-" + re.sub(r"[^A-Za-z0-9_-]", "_", wf.name)


def start_run(
    conn: Connection, wf: Workflow, tenant_id: str, trigger: Event, key: str | None
) -> str | None:
    """Append run-started for `trigger` and ask a worker to run it (after commit).

    Returns the run id, or None when nothing started: a concurrent trigger with
    the same key won the stream's expected version, or (on_duplicate="ignore")
    the key's run is still open.
    """
    run_id = ev.run_id_for(wf.name, key)
    expected = 0
    if key is not None:
        row = runs.lock_run(conn, tenant_id, run_id)
        if row is not None:
            if row.status in ("running", "suspended"):
                if wf.on_duplicate == "ignore":
                    log.info("workflow trigger ignored: run still open", extra={"run_id": run_id})
                    return None
                run_id = ev.run_id_for(wf.name, f"{key}|{trigger.id}")
                row = runs.lock_run(conn, tenant_id, run_id)
            expected = row.version if row is not None else 0
    try:
        with conn.begin_nested():
            append(
                conn,
                runs.stream(tenant_id, run_id),
                [
                    NewEvent(
                        ev.RUN_STARTED,
                        ev.run_started(wf.name, trigger.type, trigger.ref, wf.fingerprint, key),
                    )
                ],
                expected,
            )
    except VersionConflict:
        log.info("workflow trigger lost the race for its key", extra={"run_id": run_id})
        return None
    schedule_advance(conn, tenant_id, run_id)
    return run_id


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
        except DBAPIError:
            raise  # infrastructure: let the projection retry
        except Exception as exc:
            # Recorded and swallowed: a re-throw would redeliver the event.
            record_trigger_failure(conn, wf, event.tenant_id, exc)
            return
        start_run(conn, wf, event.tenant_id, event, key)

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
    elif isinstance(wf.trigger, CronTrigger):
        name = wf.name

        def tick(tenant_id: str | None, at: datetime) -> None:
            current = catalog.get(name)
            if current is not None and tenant_id is not None:
                start_cron_run(current, tenant_id, at)

        register_job(JobSpec(cron_job_name(wf), tick, wf.trigger.schedule, True, "skip"))


def unmount(wf: Workflow) -> None:
    projections.unregister(projection_name(wf))
    if isinstance(wf.trigger, CronTrigger):
        unregister_job(cron_job_name(wf))


def start_cron_run(wf: Workflow, tenant_id: str, tick: datetime) -> str | None:
    """One run per (workflow, tick): the tick event and run-started share a
    stream keyed by name + tick, so a second scheduler or a restart loses the
    expected-version race and starts nothing."""
    stamp = tick.replace(second=0, microsecond=0).isoformat()
    key = f"cron|{stamp}"
    run_id = ev.run_id_for(wf.name, key)
    try:
        with db.transaction() as conn:
            trigger = append(
                conn,
                StreamId(tenant_id, "workflow-cron", run_id),
                [NewEvent(ev.CRON_TICKED, {"workflowName": wf.name, "tick": stamp})],
                0,
            )[0]
            started = start_run(conn, wf, tenant_id, trigger, key)
    except VersionConflict:
        return None
    return started


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
