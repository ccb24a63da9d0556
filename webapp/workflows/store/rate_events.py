"""The payloads of a throttled, rate-limited or debounced run's events
(docs/workflows.md, "Throttle", "Rate limit", "Debounce"): camelCase and
stable, like every run event's (`run_events`)."""

from __future__ import annotations

from typing import Any


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
