"""Child runs in the store: their events (the child's id, the parent's
`workflow.child-started`, the child's `workflow.child-settled`), the
parent's pending row while it waits for a child, and what a settle does to
the family, in the settling transaction
just before it commits:

- a child that settles appends `workflow.child-settled` to its own stream;
  its waiting parent's row wakes inline on it (`pending.wake_matching`, as an
  awaited event does), and the claim hands the parent the child's result;
- a parent that fails or is cancelled cancels its open children (reason
  `parent_settled`), which cancel theirs in turn.

Both read the runs rows only when a registered workflow starts children."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import db
from webapp.eventstore import ANY, Event, NewEvent, StreamId, append, get_event
from webapp.workflows.definition import catalog
from webapp.workflows.definition import match as matchmod
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import OPEN, RUN_NAMESPACE
from webapp.workflows.store.tables import NEVER, workflow_runs


def waiting_row(e: Event) -> dict[str, Any]:
    """The parent's pending row for child-started (wait=True): never due, woken
    by the child's child-settled."""
    p = e.payload
    return dict(
        tenant_id=e.tenant_id,
        run_id=e.aggregate_id,
        step_index=int(p["stepIndex"]),
        workflow_name=p["workflowName"],
        suspension_event_type=ev.CHILD_STARTED,
        wake_at=NEVER,
        retry_attempt=int(p.get("attempt", 1)),
        definition_fingerprint=None,
        wait_event_type=ev.CHILD_SETTLED,
        match_expr=matchmod.persist(matchmod.eq("childRunId", p["childRunId"])),
        trigger_event_type=None,
        trigger_event_ref=None,
        after_position=None,
    )


def after_settle(conn: Connection, settling: Sequence[Event]) -> None:
    """Runs settled in this transaction: tell their parents, cancel their
    children (just before commit)."""
    names = {str(e.payload.get("workflowName")) for e in settling}
    children, parents = catalog.families()
    targets, parents = names & children, names & parents
    if targets:
        ids = sorted({e.aggregate_id for e in settling if e.payload.get("workflowName") in targets})
        db.before_commit(conn, functools.partial(_tell_parents, conn, ids))
    ended = [e for e in settling if e.type != ev.RUN_COMPLETED]
    if parents and ended:
        ids = sorted({e.aggregate_id for e in ended if e.payload.get("workflowName") in parents})
        if ids:
            db.before_commit(conn, functools.partial(_cancel_children, conn, ids))


def _tell_parents(conn: Connection, child_ids: list[str]) -> None:
    c = workflow_runs.c
    q = select(
        c.tenant_id, c.run_id, c.workflow_name, c.parent_run_id, c.status, c.trigger_event_ref
    ).where(c.run_id.in_(child_ids), c.parent_run_id.is_not(None))
    for r in conn.execute(q).all():
        started = get_event(conn, str((r.trigger_event_ref or {}).get("eventId", "")))
        step = int(started.payload.get("stepIndex", 0)) if started is not None else 0
        payload = child_settled(r.workflow_name, r.run_id, r.parent_run_id, step, str(r.status))
        append(conn, _stream(r.tenant_id, r.run_id), [NewEvent(ev.CHILD_SETTLED, payload)], ANY)


def _stream(tenant_id: str, run_id: str) -> StreamId:
    return StreamId(tenant_id, ev.AGGREGATE_TYPE, run_id)


def _cancel_children(conn: Connection, parent_ids: list[str]) -> None:
    c = workflow_runs.c
    q = select(workflow_runs).where(c.parent_run_id.in_(parent_ids), c.status.in_(OPEN))
    for child in conn.execute(q.order_by(c.run_id)).all():
        append(
            conn,
            _stream(child.tenant_id, child.run_id),
            [
                NewEvent(
                    ev.RUN_CANCELLED,
                    {
                        "workflowName": child.workflow_name,
                        "stepIndex": child.step_index,
                        "reason": ev.REASON_PARENT_SETTLED,
                        "parentRunId": child.parent_run_id,
                    },
                )
            ],
            child.version,
        )


def results_of(conn: Connection, tenant_id: str, run_ids: set[str]) -> dict[str, Any]:
    """The stored results of these runs (a settled child's, for its parent)."""
    if not run_ids:
        return {}
    c = workflow_runs.c
    q = select(c.run_id, c.results, c.status).where(
        c.tenant_id == tenant_id, c.run_id.in_(sorted(run_ids))
    )
    return {r.run_id: dict(r.results or {}) for r in conn.execute(q)}


# -- the child events ------------------------------------------------------------


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
