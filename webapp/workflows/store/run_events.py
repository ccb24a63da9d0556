"""The events on a run's own stream (aggregate type `workflow-run`).

Payload keys are camelCase and stable (stored runs are read with them); the
last two (`run-cancelled`, `run-retried`) serve the operator commands.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any


class RunStatus(StrEnum):
    """The status a run's `workflow_runs` row holds (a StrEnum: it is stored,
    compared and shown as the plain word)."""

    QUEUED = "queued"  # over its concurrency limit: not started yet
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"  # never started: its trigger was refused (a cron overlap, a rate limit)


OPEN = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SUSPENDED)
HOLDING = (RunStatus.RUNNING, RunStatus.SUSPENDED)  # holds its concurrency slot
SETTLED = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.SKIPPED)

AGGREGATE_TYPE = "workflow-run"

CONSUMED = "$consumed"  # results key: position of the last awaited event a run used
CHILD_FAILED = "$child_failed"  # results key: the child that did not complete (its step raises)

RUN_QUEUED = "workflow.run-queued"
RUN_STARTED = "workflow.run-started"
STEP_WAITING = "workflow.step.waiting"
STEP_WAITING_FOR_EVENT = "workflow.step.waiting-for-event"
RETRY_SCHEDULED = "workflow.retry.scheduled"
STEP_RESUMED = "workflow.step.resumed"
RUN_COMPLETED = "workflow.run-completed"
RUN_FAILED = "workflow.run-failed"
RUN_CANCELLED = "workflow.run-cancelled"
RUN_RETRIED = "workflow.run-retried"
RUN_MIGRATED = "workflow.run-migrated"
RUN_PAUSED = "workflow.run-paused"
RUN_UNPAUSED = "workflow.run-unpaused"
CHILD_STARTED = "workflow.child-started"  # on the parent's stream; the child's trigger
CHILD_SETTLED = "workflow.child-settled"  # on the child's stream, after it settled
RUN_SKIPPED = "workflow.run-skipped"
# A queued throttled or debounced run's start moves: a new trigger of its
# debounce key (which becomes the run's trigger), or a full throttle window
# when its planned start came.
RUN_DEBOUNCED = "workflow.run-debounced"
RUN_DELAYED = "workflow.run-delayed"
# A wait for a signal or an update (`store.messages`): woken by one, the run
# takes the step again and takes the message there; its timeout: None.
STEP_WAITING_FOR_MESSAGE = "workflow.step.waiting-for-message"

# A collecting batch takes one more trigger event (`batch=collect(...)`).
RUN_BATCHED = "workflow.run-batched"

SUSPENSIONS = (STEP_WAITING, STEP_WAITING_FOR_EVENT, RETRY_SCHEDULED, STEP_WAITING_FOR_MESSAGE)
SETTLING = (RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED)
ALL = (
    RUN_QUEUED,
    RUN_STARTED,
    *SUSPENSIONS,
    STEP_RESUMED,
    *SETTLING,
    RUN_RETRIED,
    RUN_MIGRATED,
    RUN_PAUSED,
    RUN_UNPAUSED,
    CHILD_STARTED,
    CHILD_SETTLED,
    RUN_SKIPPED,
    RUN_DEBOUNCED,
    RUN_DELAYED,
    RUN_BATCHED,
)

# Events that trigger cron and webhook workflows (a run always references one).
CRON_TICKED = "workflow.cron-ticked"
WEBHOOK_RECEIVED = "workflow.webhook-received"

SKIPPED_OVERLAP = "overlap"  # run-skipped: a cron tick while the previous run was open
SKIPPED_RATE_LIMIT = "rate_limit"  # run-skipped: its rate limit's window was full
SKIPPED_SINGLETON = "singleton"  # run-skipped: a run of its singleton key was open

REASON_DEFINITION_CHANGED = "workflow_definition_changed"
REASON_TRIGGER_UNAVAILABLE = "trigger_event_unavailable"
REASON_AWAITED_UNAVAILABLE = "awaited_event_unavailable"
REASON_DEADLINE = "deadline_exceeded"
REASON_PARENT_SETTLED = "parent_settled"  # a child cancelled with its parent
REASON_CANCELLED_BY_EVENT = "cancelled_by_event"
REASON_REPLACED = "replaced"  # a singleton's new trigger replaced the open run

# A run's controls live in the pending set beside its suspension, at step
# indexes below 0, so the timer, the wake-up and the claim serve them too:
# its deadline (`timeout=`), due at the deadline; its delayed start (a
# throttled or debounced run, queued until then); and one row per
# `cancel_on` entry, waiting (never due) for its event like a wait-for-event.
DEADLINE = "workflow.deadline"
START = "workflow.start"
CANCEL_ON = "workflow.cancel-on"
DEADLINE_STEP = -1
START_STEP = -2
CANCEL_ON_STEP = -3  # the first entry's; the next ones count down
MAX_CANCEL_ON = 20

# Frozen: changing it would re-key every keyed run.
RUN_NAMESPACE = uuid.UUID("6b0f3c1e-2d4a-4f8e-9a71-0c5e3b9d7a24")


def run_id_for(workflow_name: str, key: str | None) -> str:
    if key is None:
        return str(uuid.uuid4())
    return str(uuid.uuid5(RUN_NAMESPACE, f"{workflow_name}|{key}"))


def step_error(exc: BaseException | None) -> str:
    """Generic error text for events: the raw message may hold personal data."""
    if isinstance(exc, Exception):
        return f"workflow step failed ({type(exc).__name__})"
    return "workflow step failed (unknown error)"


def run_started(
    workflow_name: str,
    trigger_event_type: str,
    trigger_ref: dict[str, Any],
    fingerprint: str,
    idempotency_key: str | None,
    version: int = 1,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "workflowName": workflow_name,
        "triggerEventType": trigger_event_type,
        "triggerEventRef": trigger_ref,
        "definitionFingerprint": fingerprint,
    }
    if version != 1:  # absent: version 1 (runs started before versions existed)
        payload["definitionVersion"] = version
    if idempotency_key is not None:
        payload["idempotencyKey"] = idempotency_key
    return payload


def with_controls(
    payload: dict[str, Any],
    deadline_at: str | None,
    cancel_on: list[dict[str, Any]],
    trigger_position: int,
) -> dict[str, Any]:
    """run-started (or run-queued) of a workflow with a deadline (`deadlineAt`)
    or cancel-on events (`cancelOn`: each {eventType, match}, matched against
    events after the trigger's position, `triggerPosition`)."""
    out = dict(payload)
    if deadline_at is not None:
        out["deadlineAt"] = deadline_at
    if cancel_on:
        out["cancelOn"] = cancel_on
        out["triggerPosition"] = trigger_position
    return out


def with_slot(payload: dict[str, Any], key: str, priority: int) -> dict[str, Any]:
    """run-queued, or run-started of a limited workflow: its concurrency key
    ("" for a workflow-wide limit) and priority."""
    return {**payload, "concurrencyKey": key, "priority": priority}


def started_from(row: Any) -> dict[str, Any]:
    """The run-started payload of a queued run, from its runs row (with its
    slot when its workflow is limited)."""
    payload = run_started(
        row.workflow_name,
        row.trigger_event_type,
        row.trigger_event_ref,
        row.fingerprint,
        row.idempotency_key,
        row.definition_version,
    )
    if row.parent_run_id is not None:  # a queued child keeps its parent
        payload["parentRunId"] = row.parent_run_id
    if getattr(row, "rate_key", None) is not None:
        payload["rateKey"] = row.rate_key
    if row.concurrency_key is None:
        return payload
    return with_slot(payload, row.concurrency_key, row.priority)


def step_waiting(step_index: int, wake_at: str, workflow_name: str, fp: str) -> dict[str, Any]:
    return {
        "stepIndex": step_index,
        "wakeAt": wake_at,
        "workflowName": workflow_name,
        "definitionFingerprint": fp,
    }


def step_waiting_for_event(
    step_index: int,
    event_type: str,
    match: dict[str, Any] | None,
    timeout_at: str,
    workflow_name: str,
    fp: str,
    after: int,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "stepIndex": step_index,
        "eventType": event_type,
        "timeoutAt": timeout_at,
        "workflowName": workflow_name,
        "definitionFingerprint": fp,
        "afterPosition": after,  # only events after it count (the trigger, or the last consumed)
    }
    if match is not None:
        payload["match"] = match
    return payload


def retry_scheduled(
    step_index: int, attempt: int, max_attempts: int, wake_at: str, workflow_name: str, error: str
) -> dict[str, Any]:
    return {
        "stepIndex": step_index,
        "attempt": attempt,
        "maxAttempts": max_attempts,
        "wakeAt": wake_at,
        "workflowName": workflow_name,
        "error": error,
    }


def step_resumed(step_index: int, retry_attempt: int | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"stepIndex": step_index}
    if retry_attempt is not None:
        payload["retryAttempt"] = retry_attempt
    return payload


def run_completed(workflow_name: str, step_count: int) -> dict[str, Any]:
    return {"workflowName": workflow_name, "stepIndex": step_count}


def run_failed(
    workflow_name: str, step_index: int, error: str, reason: str | None = None
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "workflowName": workflow_name,
        "stepIndex": step_index,
        "error": error,
    }
    if reason is not None:
        payload["reason"] = reason
    return payload


def run_migrated(
    workflow_name: str,
    from_version: int,
    to_version: int,
    from_step: int,
    to_step: int,
    fingerprint: str,
    mapping: dict[str, str] | None = None,
    automatic: bool = False,
) -> dict[str, Any]:
    """A run moved to another definition: by an operator (`migrate`, with the
    step map), or on its own (`automatic`) when its definition changed only
    after where it stands."""
    payload: dict[str, Any] = {
        "workflowName": workflow_name,
        "from": from_version,
        "to": to_version,
        "fromStep": from_step,
        "toStep": to_step,
        "map": dict(mapping or {}),
        "definitionFingerprint": fingerprint,
    }
    if automatic:
        payload["automatic"] = True
    return payload


def run_paused(workflow_name: str, step_index: int, by: str) -> dict[str, Any]:
    """Paused (`by`: "run", an operator paused it; "workflow", its workflow)."""
    return {"workflowName": workflow_name, "stepIndex": step_index, "by": by}


def run_unpaused(workflow_name: str, step_index: int) -> dict[str, Any]:
    return {"workflowName": workflow_name, "stepIndex": step_index}


def run_skipped(
    workflow: str,
    trigger_type: str,
    trigger_ref: dict[str, Any],
    reason: str,
    key: str | None,
    version: int,
) -> dict[str, Any]:
    """The one event of a run that never started: its trigger (`type`, `ref`
    as in run-started's `triggerEventRef`), why (`reason`: "overlap", ...),
    its idempotency key (or None) and the workflow version it would have run."""
    return {
        "workflowName": workflow,
        "trigger": {"type": trigger_type, "ref": trigger_ref},
        "reason": reason,
        "key": key,
        "version": version,
    }
