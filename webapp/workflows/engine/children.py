"""Starting a child run (`run_workflow`): in one transaction with the
parent's progress, the parent's `workflow.child-started` (the child's trigger
event) and the child's own `workflow.run-started` (or `run-queued`, when the
child's workflow is limited and full, or paused).

With `wait`, the child-started event suspends the parent (its projection
writes a pending row waiting for the child's `workflow.child-settled`,
`store.children`); the claim then hands the parent the child's return value,
or marks the step so it raises `ChildWorkflowFailed` (a `retry` around it
starts a new child, whose id counts the attempt)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.core import db
from webapp.eventstore import Event, NewEvent, append
from webapp.workflows.definition import catalog
from webapp.workflows.definition.children import ChildWorkflowFailed
from webapp.workflows.definition.controls import priority_of
from webapp.workflows.definition.model import RunContext, Step, Workflow, child_step
from webapp.workflows.engine import heartbeat
from webapp.workflows.engine.run_controls import with_controls
from webapp.workflows.engine.stops import RunResult
from webapp.workflows.interpreter import json_safe, resolve
from webapp.workflows.store import children as child_store
from webapp.workflows.store import definitions, pauses, runs, slots, start_signal
from webapp.workflows.store import run_events as ev


def raise_if_failed(ctx: RunContext) -> None:
    """The step's child did not complete (the claim marked it): raise, so the
    step fails, or its retry starts a new child."""
    failed = ctx.results.pop(ev.CHILD_FAILED, None)
    if failed is not None and int(failed.get("stepIndex", -1)) == ctx.step_index:
        raise ChildWorkflowFailed(f"child run {failed.get('runId')} {failed.get('status')}")


def start(ctx: RunContext, step: Step, token: str) -> str | None:
    """Start the step's child. "suspended" (the parent waits for it), "lost"
    (the lease is gone), or None: started without waiting, the step's result
    (the child's run id) committed with the parent's progress."""
    inner = child_step(step)
    assert inner is not None
    child_wf = catalog.get(inner.workflow)
    if child_wf is None:
        raise LookupError(f"run_workflow: workflow {inner.workflow!r} is not registered")
    value = json_safe(resolve(inner.input, ctx), step.name)
    child_id = child_store.child_run_id(ctx.run_id, ctx.step_index, ctx.attempt)
    with db.transaction() as conn:
        row = runs.owned(conn, ctx.tenant_id, ctx.run_id, token)
        if row is None:
            return RunResult.LOST
        if inner.wait:
            runs.save(conn, row, results=ctx.results)
        else:
            ctx.results[step.name] = child_id
            runs.save(
                conn,
                row,
                results=ctx.results,
                step_index=ctx.step_index + 1,
                attempt=1,
                lease_until=heartbeat.lease_until(),
            )
        payload = child_store.child_started(
            ctx.workflow_name,
            ctx.step_index,
            ctx.attempt,
            child_id,
            child_wf.name,
            value,
            inner.wait,
        )
        trigger = runs.append_run_event(conn, row, ev.CHILD_STARTED, payload)
        start_child(conn, child_wf, ctx.tenant_id, child_id, trigger, ctx.run_id)
    return RunResult.SUSPENDED if inner.wait else None


def start_child(
    conn: Connection, wf: Workflow, tenant_id: str, run_id: str, trigger: Event, parent: str
) -> None:
    """The child's first event, on its own stream (expected version 0: a
    second start of the same child is a conflict, never a second run)."""
    payload: dict[str, Any] = ev.run_started(
        wf.name, trigger.type, trigger.ref, wf.fingerprint, None, wf.version
    )
    payload = with_controls(wf, tenant_id, run_id, trigger, payload)
    payload.update(parentRunId=parent, parentStep=int(trigger.payload["stepIndex"]))
    definitions.record(conn, wf)
    paused = pauses.is_paused(conn, wf.name)
    event_type = ev.RUN_QUEUED if paused else ev.RUN_STARTED
    if wf.concurrency is not None:
        key = wf.concurrency.key_for(trigger)
        payload = ev.with_slot(payload, key, priority_of(wf.priority, trigger))
        if not paused and not slots.admits(conn, (tenant_id, wf.name, key), wf.concurrency):
            event_type = ev.RUN_QUEUED
    if paused:
        payload["paused"] = True
    append(conn, runs.stream(tenant_id, run_id), [NewEvent(event_type, payload)], 0)
    if event_type == ev.RUN_STARTED:
        start_signal.signal(conn, tenant_id, [run_id])
