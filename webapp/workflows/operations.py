"""Operator actions behind `flask workflows ...`: list, show, cancel, retry, stuck."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, or_, select

from webapp import clock, db
from webapp.eventstore import Event, read_stream
from webapp.workflows.definition import catalog
from webapp.workflows.dispatch.signals import schedule_advance
from webapp.workflows.dispatch.sweep import STUCK_AFTER
from webapp.workflows.engine import resume as resuming
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs


def resume(tenant_id: str, run_id: str, step_index: int) -> str:
    """resume-run by hand (rules 1-7, docs/workflows.md): the result word."""
    return resuming.resume_run(tenant_id, run_id, step_index)


class OperationError(Exception):
    """An operator action that cannot be done (message says why)."""


def list_runs(
    conn: Connection, status: str | None = None, workflow: str | None = None, limit: int = 200
) -> list[Any]:
    q = select(workflow_runs).order_by(workflow_runs.c.started_at.desc()).limit(limit)
    if status:
        q = q.where(workflow_runs.c.status == status)
    if workflow:
        q = q.where(workflow_runs.c.workflow_name == workflow)
    return list(conn.execute(q))


def find_run(conn: Connection, run_id: str) -> Any:
    rows = list(conn.execute(select(workflow_runs).where(workflow_runs.c.run_id == run_id)))
    if not rows:
        raise OperationError(f"no run {run_id}")
    return rows[0]


def timeline(conn: Connection, run_id: str) -> list[Event]:
    row = find_run(conn, run_id)
    return read_stream(conn, runs.stream(row.tenant_id, row.run_id))


def pending_rows(conn: Connection, run_id: str) -> list[Any]:
    return list(
        conn.execute(select(workflow_run_pending).where(workflow_run_pending.c.run_id == run_id))
    )


def cancel(run_id: str, reason: str = "cancelled by operator", actor: str | None = None) -> Event:
    """Append run-cancelled (with `actor`, who did it, in its metadata): its
    pending rows go (inline) and it never resumes; a worker executing it stops
    before its next step (its lease is gone)."""
    with db.transaction() as conn:
        found = find_run(conn, run_id)
        row = runs.lock_run(conn, found.tenant_id, run_id)
        if row.status in ("completed", "failed", "cancelled"):
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
        if row.status != "failed":
            raise OperationError(f"run {run_id} is {row.status}; only failed runs can be retried")
        wf = catalog.get(row.workflow_name)
        if wf is None:
            raise OperationError(f"workflow {row.workflow_name!r} is not registered")
        if wf.fingerprint != row.fingerprint:
            raise OperationError(
                f"workflow {row.workflow_name!r} changed since this run started; start a new run instead"
            )
        if not row.trigger_event_ref:
            raise OperationError(f"run {run_id} never started (its trigger failed)")
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
    limit = clock.now() - STUCK_AFTER
    out: list[dict[str, Any]] = []
    for p in conn.execute(
        select(workflow_run_pending)
        .where(workflow_run_pending.c.wake_at < limit)
        .order_by(workflow_run_pending.c.wake_at)
    ):
        out.append(
            {
                "run_id": p.run_id,
                "tenant_id": p.tenant_id,
                "workflow": p.workflow_name,
                "step_index": p.step_index,
                "due_since": p.wake_at,
                "state": "suspended",
            }
        )
    for r in conn.execute(
        select(workflow_runs).where(
            workflow_runs.c.status == "running",
            or_(workflow_runs.c.lease_until < limit, workflow_runs.c.lease_until.is_(None)),
        )
    ):
        out.append(
            {
                "run_id": r.run_id,
                "tenant_id": r.tenant_id,
                "workflow": r.workflow_name,
                "step_index": r.step_index,
                "due_since": r.lease_until,
                "state": "running",
            }
        )
    return out
