"""Child workflows: the `run_workflow` step, and which steps start a child.

A child is a run of another registered workflow, started by its parent's
step. With `wait=True` the parent suspends until the child settles and takes
its return value as the step's result; a child that fails or is cancelled
raises in the parent's step, so a `retry` around it starts a new child
(`retry("charge", times=3, do=[run_workflow("charge-card", ...)])`)."""

from __future__ import annotations

import re
from typing import Any

from webapp.workflows.definition.errors import DefinitionError
from webapp.workflows.definition.model import RunWorkflow

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,199}$")


class ChildWorkflowFailed(Exception):
    """The child run of a `run_workflow` step failed or was cancelled."""


def run_workflow(
    workflow: str, input: Any = None, wait: bool = True, name: str | None = None
) -> RunWorkflow:
    """Start a child run of `workflow` with `input` (a value or a function of
    the run context; JSON). `wait`: suspend until it settles and take its
    return value; else go on at once with the child's run id as the result.
    The step's name defaults to the child workflow's."""
    if not isinstance(workflow, str) or not _NAME.match(workflow):
        raise DefinitionError(f"run_workflow: {workflow!r} is not a workflow name")
    if not isinstance(wait, bool):
        raise DefinitionError(f"run_workflow {workflow!r}: wait must be True or False")
    return RunWorkflow(name or workflow, workflow, input, wait)
