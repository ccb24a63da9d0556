"""The workflows this deployment runs (their versions, whether paused), and
pausing or resuming one. Workflows are code, shared by every tenant: pausing
one pauses its runs in every tenant, so `workflows:write` is an operator's
scope."""

from __future__ import annotations

from typing import Any

import webapp.workflows as wf
from webapp.api.endpoint import Call, Reply, endpoint
from webapp.api.problems import Problem
from webapp.api.schemas import (
    MAX_WORKFLOW,
    EmptyIn,
    Trigger,
    WorkflowList,
    WorkflowOut,
    WorkflowPaused,
    WorkflowVersion,
)
from webapp.core import actors, db
from webapp.workflows import operations as ops
from webapp.workflows import pausing
from webapp.workflows.definition import catalog
from webapp.workflows.store import pauses

NAME = {"name": {"type": "string", "minLength": 1, "maxLength": MAX_WORKFLOW}}


def _trigger(t: Any) -> Trigger:
    return Trigger(
        kind=t.kind,
        event_type=getattr(t, "event_type", None),
        schedule=getattr(t, "schedule", None),
        path=getattr(t, "path", None),
    )


def _definitions() -> dict[str, list[Any]]:
    by_name: dict[str, list[Any]] = {}
    for w in wf.registered():
        by_name.setdefault(w.name, []).append(w)
    return by_name


@endpoint(
    "GET",
    "/workflows",
    summary="List workflows",
    tag="workflows",
    scope="runs:read",
    responses={200: WorkflowList},
    errors=(400, 401, 403, 429),
)
def list_workflows(call: Call) -> Reply:
    """Every workflow in the code: its trigger, its versions (which one new
    triggers start), whether it is paused."""
    with db.reading() as conn:
        paused = pauses.paused_workflows(conn)
    out = []
    for name, versions in sorted(_definitions().items()):
        starting = catalog.get(name)  # the version new triggers start
        start_version = starting.version if starting is not None else None
        out.append(
            WorkflowOut(
                name=name,
                paused=name in paused,
                trigger=_trigger(versions[-1].trigger),
                versions=[
                    WorkflowVersion(version=v.version, starts=v.version == start_version)
                    for v in versions
                ],
            )
        )
    return Reply(200, WorkflowList(workflows=out))


def _toggle(call: Call, action: Any, paused: bool) -> Reply:
    name = call.path["name"]
    if name not in _definitions():
        raise Problem("not-found", f"no workflow {name!r}")
    try:
        n = action(name, actors.api_token(call.token.id))
    except ops.OperationError as exc:
        raise Problem("conflict", str(exc)) from None
    return Reply(200, WorkflowPaused(name=name, paused=paused, runs=n))


@endpoint(
    "POST",
    "/workflows/{name}/pause",
    summary="Pause a workflow",
    tag="workflows",
    scope="workflows:write",
    body=EmptyIn,
    body_optional=True,
    responses={200: WorkflowPaused},
    errors=(400, 401, 403, 404, 409, 413, 415, 429),
    path_params=NAME,
)
def pause_workflow(call: Call) -> Reply:
    """New triggers queue and open runs pause, in every tenant. 409 when paused already."""
    return _toggle(call, lambda n, actor: pausing.pause_workflow(n, actor=actor), True)


@endpoint(
    "POST",
    "/workflows/{name}/resume",
    summary="Resume a workflow",
    tag="workflows",
    scope="workflows:write",
    body=EmptyIn,
    body_optional=True,
    responses={200: WorkflowPaused},
    errors=(400, 401, 403, 404, 409, 413, 415, 429),
    path_params=NAME,
)
def resume_workflow(call: Call) -> Reply:
    """The runs its pause held go on, queued triggers start. 409 when not paused."""
    return _toggle(call, lambda n, actor: pausing.resume_workflow(n, actor=actor), False)
