"""The events of child runs (`run_workflow`): the child's id, the parent's
`workflow.child-started` (the child's trigger) and the child's
`workflow.child-settled` (what wakes its waiting parent)."""

from __future__ import annotations

import uuid
from typing import Any

from webapp.workflows.store.run_events import RUN_NAMESPACE


def child_run_id(parent_run_id: str, step_index: int, attempt: int) -> str:
    """A child's id, from its parent's id and step (and the attempt of a retry
    around it): a parent that runs the step again never starts a second child."""
    suffix = "" if attempt == 1 else f"|{attempt}"
    return str(uuid.uuid5(RUN_NAMESPACE, f"child|{parent_run_id}|{step_index}{suffix}"))


def child_started(
    workflow_name: str,
    step_index: int,
    attempt: int,
    child_run_id: str,
    child_workflow: str,
    input: Any,
    wait: bool,
) -> dict[str, Any]:
    """On the parent's stream: it started a child (the child's trigger event:
    the child reads its input as `ctx.trigger.payload["input"]`)."""
    return {
        "workflowName": workflow_name,
        "stepIndex": step_index,
        "attempt": attempt,
        "childRunId": child_run_id,
        "childWorkflow": child_workflow,
        "input": input,
        "wait": wait,
    }


def child_settled(
    workflow_name: str, child_run_id: str, parent_run_id: str, parent_step: int, status: str
) -> dict[str, Any]:
    """On the child's stream, once it settled: what wakes its waiting parent
    (which reads the child's result from the child's row, not from here)."""
    return {
        "workflowName": workflow_name,
        "childRunId": child_run_id,
        "parentRunId": parent_run_id,
        "parentStep": parent_step,
        "status": status,
    }
