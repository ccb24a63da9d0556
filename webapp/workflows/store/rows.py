"""What each run event sets in its read models, as plain values: the
`workflow_runs` row (one per run) and the `workflow_run_pending` row (one per
suspended step). `projection` writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, select

from webapp.eventstore import Event
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

# The wake time of a cancel-on row until its event comes: never due.
NEVER = datetime(9999, 1, 1, tzinfo=UTC)
# The wake time of a due row whose run (`slot="active"`) waits for a free
# slot to resume: never due until a refill makes it due again.
SLOT_WAIT = datetime(9998, 1, 1, tzinfo=UTC)


def timed(at: datetime) -> bool:
    """A real wake time (not a row that waits for its event or a slot)."""
    return at < SLOT_WAIT


# A started run not picked up by a worker within this time is re-dispatched by the sweep.
START_GRACE = timedelta(seconds=10)


def run_key(e: Event) -> Any:
    return (workflow_runs.c.tenant_id == e.tenant_id) & (workflow_runs.c.run_id == e.aggregate_id)


def pending_key(e: Event) -> Any:
    return (workflow_run_pending.c.tenant_id == e.tenant_id) & (
        workflow_run_pending.c.run_id == e.aggregate_id
    )


def exists(conn: Connection, e: Event) -> bool:
    return conn.execute(select(workflow_runs.c.run_id).where(run_key(e))).first() is not None


def fingerprint_for(conn: Connection, e: Event) -> str | None:
    """The fingerprint a suspension stores: its payload's, else the run's (retry.scheduled)."""
    fp = e.payload.get("definitionFingerprint")
    if fp:
        return str(fp)
    row = conn.execute(select(workflow_runs.c.fingerprint).where(run_key(e))).first()
    return row.fingerprint if row else None


def pending_row(e: Event, fingerprint: str | None) -> dict[str, Any]:
    p = e.payload
    wake = p.get("wakeAt") or p["timeoutAt"]
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        step_index=int(p["stepIndex"]),
        workflow_name=p["workflowName"],
        suspension_event_type=e.type,
        wake_at=datetime.fromisoformat(wake),
        retry_attempt=p.get("attempt") if e.type == ev.RETRY_SCHEDULED else None,
        definition_fingerprint=fingerprint,
        wait_event_type=p.get("eventType"),
        match_expr=p.get("match"),
        trigger_event_type=None,
        trigger_event_ref=None,
        after_position=None,
    )


def suspended_values(e: Event, now: datetime) -> dict[str, Any]:
    values: dict[str, Any] = dict(
        status=RunStatus.SUSPENDED,
        step_index=int(e.payload["stepIndex"]),
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )
    if e.type == ev.RETRY_SCHEDULED:
        values["attempt"] = int(e.payload["attempt"])
    return values


def resumed_values(e: Event, now: datetime) -> dict[str, Any]:
    return dict(status=RunStatus.RUNNING, version=e.version, updated_at=now)


def retried_values(e: Event, now: datetime) -> dict[str, Any]:
    """An operator's retry: running again from the failed step, leased by nobody."""
    return dict(
        status=RunStatus.RUNNING,
        step_index=int(e.payload["stepIndex"]),
        attempt=1,
        version=e.version,
        error=None,
        reason=None,
        lease_token=None,
        lease_until=now + START_GRACE,
        updated_at=now,
    )


def started_row(e: Event, now: datetime) -> dict[str, Any]:
    p = e.payload
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=p["workflowName"],
        status=RunStatus.RUNNING,
        step_index=int(p.get("fromStep", 0)),  # a rerun starts at its step
        attempt=1,
        version=e.version,
        fingerprint=p["definitionFingerprint"],
        definition_version=int(p.get("definitionVersion", 1)),
        idempotency_key=p.get("idempotencyKey"),
        trigger_event_type=p["triggerEventType"],
        trigger_event_ref=p["triggerEventRef"],
        subject_id=(p["triggerEventRef"] or {}).get("aggregateId"),
        concurrency_key=p.get("concurrencyKey"),
        priority=p.get("priority"),
        parent_run_id=p.get("parentRunId"),
        rate_key=p.get("rateKey"),
        started_position=e.position,
        results={},
        error=None,
        reason=None,
        lease_token=None,
        lease_until=now + START_GRACE,
        started_at=now,
        updated_at=now,
    )


def migrated_values(e: Event, now: datetime) -> dict[str, Any]:
    """A run moved to another definition (and, by a map, another step)."""
    p = e.payload
    return dict(
        version=e.version,
        definition_version=int(p["to"]),
        fingerprint=p["definitionFingerprint"],
        step_index=int(p["toStep"]),
        updated_at=now,
    )


def queued_row(e: Event, now: datetime) -> dict[str, Any]:
    """A run over its concurrency limit, or of a paused workflow: a row, no
    lease, not started."""
    row = started_row(e, now)
    row.update(status=RunStatus.QUEUED, lease_until=None)
    if e.payload.get("startAt"):  # throttled or debounced: when it plans to start
        row["started_at"] = datetime.fromisoformat(e.payload["startAt"])
    if e.payload.get("paused"):
        row["paused_by"] = "workflow"
    return row


def skipped_row(e: Event, now: datetime) -> dict[str, Any]:
    """A run that never started (run-skipped): settled at once as skipped,
    with its trigger and why (`reason`)."""
    p = e.payload
    ref = p["trigger"]["ref"]
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=p["workflowName"],
        status=RunStatus.SKIPPED,
        step_index=0,
        attempt=0,
        version=e.version,
        fingerprint="",
        definition_version=int(p.get("version") or 1),
        idempotency_key=p.get("key"),
        trigger_event_type=p["trigger"]["type"],
        trigger_event_ref=ref,
        subject_id=(ref or {}).get("aggregateId"),
        started_position=e.position,
        results={},
        reason=p.get("reason"),
        started_at=now,
        updated_at=now,
    )


def moved_start_values(e: Event, now: datetime) -> dict[str, Any]:
    """A queued run's start moved (run-debounced: to its new trigger too)."""
    p = e.payload
    values: dict[str, Any] = dict(
        version=e.version, started_at=datetime.fromisoformat(p["startAt"]), updated_at=now
    )
    if e.type == ev.RUN_DEBOUNCED:
        values.update(
            trigger_event_type=p["triggerEventType"],
            trigger_event_ref=p["triggerEventRef"],
            subject_id=(p["triggerEventRef"] or {}).get("aggregateId"),
        )
    return values


def paused_values(e: Event, now: datetime) -> dict[str, Any]:
    """A paused run takes no step: a running one loses its lease (its worker
    stops before its next commit), a queued one is not started."""
    return dict(
        version=e.version,
        paused_by=e.payload.get("by", "run"),
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )


def unpaused_values(e: Event, now: datetime) -> dict[str, Any]:
    """Free to go on: a running run may be leased again at once."""
    return dict(version=e.version, paused_by=None, lease_until=now, updated_at=now)


def unstarted_row(e: Event, now: datetime) -> dict[str, Any]:
    """The row of a run that failed before it started (its trigger raised)."""
    row: dict[str, Any] = dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=e.payload.get("workflowName", "?"),
        step_index=int(e.payload.get("stepIndex", 0)),
        attempt=1,
        fingerprint="",
        started_position=e.position,
        results={},
        started_at=now,
    )
    row.update(settled_values(e, now))
    return row


def settled_values(e: Event, now: datetime) -> dict[str, Any]:
    status = {
        ev.RUN_COMPLETED: RunStatus.COMPLETED,
        ev.RUN_FAILED: RunStatus.FAILED,
        ev.RUN_CANCELLED: RunStatus.CANCELLED,
    }[e.type]
    values: dict[str, Any] = dict(
        status=status,
        version=e.version,
        lease_token=None,
        lease_until=None,
        updated_at=now,
    )
    if e.type == ev.RUN_FAILED:
        values.update(error=e.payload.get("error"), reason=e.payload.get("reason"))
    elif e.type == ev.RUN_CANCELLED and e.payload.get("reason"):
        values["reason"] = str(e.payload["reason"])[:100]  # e.g. cancelled_by_event
    if e.type != ev.RUN_COMPLETED and "stepIndex" in e.payload:
        values["step_index"] = int(e.payload["stepIndex"])
    return values
