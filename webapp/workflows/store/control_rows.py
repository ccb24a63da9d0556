"""The pending rows of a new run's controls, from its run-started (or
run-queued) payload: its deadline (due then) and one never-due row per
cancel-on event, woken like a wait-for-event's (`pending.wake_matching`).
They sit below step 0 (`run_events.DEADLINE_STEP`, `CANCEL_ON_STEP`) and go
only when the run settles (`projection`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from webapp.eventstore import Event
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import NEVER


def control_rows(e: Event) -> list[dict[str, Any]]:
    """The pending rows of a new run's controls (run-started / run-queued):
    its deadline, due then, and one never-due row per cancel-on event, woken
    like a wait-for-event's (`pending.wake_matching`)."""
    p = e.payload
    base = dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        workflow_name=p["workflowName"],
        retry_attempt=None,
        definition_fingerprint=p["definitionFingerprint"],
        trigger_event_type=None,
        trigger_event_ref=None,
    )
    timed = dict(
        base, wait_event_type=None, match_expr=None, after_position=None, lookback_due=None
    )
    out = []
    if e.type == ev.RUN_QUEUED and p.get("startAt"):  # throttled or debounced: its start
        at = datetime.fromisoformat(p["startAt"])
        out.append(
            dict(timed, step_index=ev.START_STEP, suspension_event_type=ev.START, wake_at=at)
        )
    if p.get("deadlineAt"):
        at = datetime.fromisoformat(p["deadlineAt"])
        out.append(
            dict(timed, step_index=ev.DEADLINE_STEP, suspension_event_type=ev.DEADLINE, wake_at=at)
        )
    for i, c in enumerate(p.get("cancelOn") or ()):
        out.append(
            dict(
                base,
                step_index=ev.CANCEL_ON_STEP - i,
                suspension_event_type=ev.CANCEL_ON,
                wake_at=NEVER,
                wait_event_type=c["eventType"],
                match_expr=c.get("match"),
                after_position=int(p.get("triggerPosition", 0)),
                lookback_due=True,  # cleared by its look-back (`store.pending`)
            )
        )
    return out
