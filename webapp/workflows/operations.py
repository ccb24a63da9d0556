"""Operator actions behind `flask workflows ...`: list, show, cancel, retry, stuck."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.core import db
from webapp.eventstore import Event, read_stream
from webapp.workflows.definition.model import STATE
from webapp.workflows.dispatch.signals import schedule_advance
from webapp.workflows.dispatch.sweep import STUCK_AFTER
from webapp.workflows.engine import resume as resuming
from webapp.workflows.engine.resume import fits
from webapp.workflows.store import batches, definitions, messages, queries, runs, singletons, slots
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import SETTLED, RunStatus


def resume(tenant_id: str, run_id: str, step_index: int) -> str:
    """resume-run by hand (rules 1-7, docs/workflows.md): the result word.
    ValueError (rule 1) names what is wrong with the request."""
    return resuming.resume_run(tenant_id, run_id, step_index)


class OperationError(Exception):
    """An operator action that cannot be done (message says why)."""


def list_runs(
    conn: Connection, status: str | None = None, workflow: str | None = None, limit: int = 200
) -> list[Any]:
    return queries.list_runs(conn, status, workflow, limit)


def find_run(conn: Connection, run_id: str) -> Any:
    row = queries.find_run(conn, run_id)
    if row is None:
        raise OperationError(f"no run {run_id}")
    return row


def timeline(conn: Connection, run_id: str) -> list[Event]:
    row = find_run(conn, run_id)
    return read_stream(conn, runs.stream(row.tenant_id, row.run_id))


def pending_rows(conn: Connection, run_id: str) -> list[Any]:
    return queries.pending_rows(conn, run_id)


def children(conn: Connection, row: Any) -> list[Any]:
    """The run's child runs (`run_workflow`): run id, workflow, status."""
    return queries.children(conn, row.tenant_id, row.run_id)


def describe_run(conn: Connection, run_id: str) -> dict[str, Any]:
    """What an operator asks first about a run (`flask workflows show`), as
    plain JSON-able values: status, version, results (a completed run's
    return value under "return"), the pending wait or timer, its queue place
    when queued, its batch (`batch=collect(...)`: key, count, its events)
    or singleton (`singleton=one(...)`: key, what it replaced or was
    replaced by, the open run it was skipped for), and its events."""
    row = find_run(conn, run_id)
    events = timeline(conn, run_id)
    queue = None
    if row.status == RunStatus.QUEUED:
        queue = {
            "key": row.concurrency_key,
            "position": slots.queue_position(conn, row),
            "priority": row.priority,
            "rateKey": row.rate_key,  # throttled or debounced: starts at startAt
            "startAt": row.started_at.isoformat() if row.rate_key is not None else None,
        }
    return {
        "runId": row.run_id,
        "tenant": row.tenant_id,
        "workflow": row.workflow_name,
        "version": row.definition_version,
        "status": str(row.status),
        "stepIndex": row.step_index,
        "attempt": row.attempt,
        "error": row.error,
        "reason": row.reason,
        "results": dict(row.results or {}),
        "state": dict((row.results or {}).get(STATE) or {}),
        "messages": [
            {
                "id": m.message_id,
                "kind": m.kind,
                "name": m.name,
                "status": m.status,
                "key": m.idempotency_key,
                "sentAt": m.sent_at.isoformat(),
            }
            for m in messages.of_run(conn, row.tenant_id, row.run_id)
        ],
        "concurrencyKey": row.concurrency_key,
        "rateKey": row.rate_key,
        "queue": queue,
        "parent": row.parent_run_id,
        "children": [
            {"runId": c.run_id, "workflow": c.workflow_name, "status": str(c.status)}
            for c in children(conn, row)
        ],
        "pending": [
            {
                "stepIndex": p.step_index,
                "kind": p.suspension_event_type.removeprefix("workflow."),
                "wakeAt": p.wake_at.isoformat(),
                "awaits": p.wait_event_type,
            }
            for p in pending_rows(conn, run_id)
        ],
        "events": [
            {
                "version": e.version,
                "position": e.position,
                "type": e.type,
                "recordedAt": e.recorded_at.isoformat(),
                "payload": e.payload,
                "actor": e.metadata.get("actor"),
            }
            for e in events
        ],
        "batch": batches.describe(conn, events),
        "singleton": singletons.describe(events),
    }


def cancel(run_id: str, reason: str = "cancelled by operator", actor: str | None = None) -> Event:
    """Append run-cancelled (with `actor`, who did it, in its metadata): its
    pending rows go (inline) and it never resumes; a worker executing it stops
    before its next step (its lease is gone)."""
    with db.transaction() as conn:
        found = find_run(conn, run_id)
        row = runs.lock_run(conn, found.tenant_id, run_id)
        if row.status in SETTLED:
            raise OperationError(f"run {run_id} is already {row.status}")
        return runs.append_run_event(
            conn,
            row,
            ev.RUN_CANCELLED,
            {"workflowName": row.workflow_name, "stepIndex": row.step_index, "reason": reason},
            actor,
        )


def retry(run_id: str, actor: str | None = None) -> Event:
    """A failed run continues from its failed step as a new attempt (`actor`:
    who asked, in the run-retried event's metadata)."""
    with db.transaction() as conn:
        found = find_run(conn, run_id)
        row = runs.lock_run(conn, found.tenant_id, run_id)
        if row.status != RunStatus.FAILED:
            raise OperationError(f"run {run_id} is {row.status}; only failed runs can be retried")
        wf = resuming.definition_of(row)
        if wf is None:
            raise OperationError(
                f"workflow {row.workflow_name!r} version {row.definition_version} is not registered"
            )
        shape = resuming.old_shapes(conn, [row]).get(row.fingerprint)
        adopt = fits(wf, row.fingerprint, shape, row.step_index, waiting=False)
        if adopt is None:
            raise OperationError(
                f"workflow {row.workflow_name!r} changed where this run has been; "
                "migrate it (flask workflows migrate) or start a new run instead"
            )
        if not row.trigger_event_ref:
            raise OperationError(f"run {run_id} never started (its trigger failed)")
        if adopt:
            migrated = resuming.adopted(row, row.step_index, wf)
            definitions.record(conn, wf)
            runs.append_run_event(conn, row, migrated.type, migrated.payload, actor)
            row = runs.lock_run(conn, found.tenant_id, run_id)
        e = runs.append_run_event(
            conn,
            row,
            ev.RUN_RETRIED,
            {"workflowName": row.workflow_name, "stepIndex": row.step_index},
            actor,
        )
        schedule_advance(conn, row.tenant_id, run_id)
        return e


def stuck(conn: Connection) -> list[dict[str, Any]]:
    """Runs due for more than 5 minutes and not advanced."""
    due, running = queries.stuck(conn, STUCK_AFTER)
    out: list[dict[str, Any]] = [
        {
            "run_id": p.run_id,
            "tenant_id": p.tenant_id,
            "workflow": p.workflow_name,
            "step_index": p.step_index,
            "due_since": p.wake_at,
            "state": RunStatus.SUSPENDED,
        }
        for p in due
    ]
    out += [
        {
            "run_id": r.run_id,
            "tenant_id": r.tenant_id,
            "workflow": r.workflow_name,
            "step_index": r.step_index,
            "due_since": r.lease_until,
            "state": RunStatus.RUNNING,
        }
        for r in running
    ]
    return out
