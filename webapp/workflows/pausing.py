"""Pause and resume a run or a whole workflow (`flask workflows pause|resume
RUN_ID`, `pause-workflow|resume-workflow NAME`, the console's buttons).

A paused run takes no step: a running one loses its lease (its worker stops
before its next commit, as after a cancel; the steps since its last commit run
again on resume, as after a crash), a waiting one keeps its pending row (timers
and awaited events that fall due meanwhile are kept), a queued one does not
start. Resuming signals what fell due, so it is handled at once. A paused
workflow pauses its open runs and queues its new triggers.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from webapp.core import db
from webapp.eventstore import NewEvent
from webapp.workflows.dispatch.signals import schedule_advance
from webapp.workflows.operations import OperationError, find_run
from webapp.workflows.store import pauses, rates, runs, slots, start_signal
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import OPEN, RunStatus
from webapp.workflows.store.tables import workflow_runs


def pause(run_id: str, actor: str | None = None) -> None:
    with db.transaction() as conn:
        row = _locked(conn, run_id)
        if row.status not in OPEN:
            raise OperationError(f"run {run_id} is already {row.status}")
        if row.paused_by is not None:
            raise OperationError(f"run {run_id} is already paused")
        _pause(conn, row, "run", actor)


def unpause(run_id: str, actor: str | None = None) -> None:
    with db.transaction() as conn:
        row = _locked(conn, run_id)
        if row.paused_by is None or row.status not in OPEN:
            raise OperationError(f"run {run_id} is not paused")
        if row.paused_by == "workflow" and pauses.is_paused(conn, row.workflow_name):
            raise OperationError(
                f"workflow {row.workflow_name!r} is paused: resume it (resume-workflow)"
            )
        _unpause(conn, row, actor)


def pause_workflow(name: str, actor: str | None = None) -> int:
    """Pause a workflow: new triggers queue, open runs pause. The runs paused."""
    with db.transaction() as conn:
        if not pauses.set_paused(conn, name, actor):
            raise OperationError(f"workflow {name!r} is already paused")
        rows = _open_runs(conn, name, paused=False)
        for row in rows:
            _pause(conn, row, "workflow", actor)
        return len(rows)


def resume_workflow(name: str, actor: str | None = None) -> int:
    """Resume a workflow: the runs its pause held go on. The runs resumed."""
    with db.transaction() as conn:
        if not pauses.clear_paused(conn, name):
            raise OperationError(f"workflow {name!r} is not paused")
        rows = [r for r in _open_runs(conn, name, paused=True) if r.paused_by == "workflow"]
        for row in rows:
            _unpause(conn, row, actor)
        return len(rows)


def _locked(conn: Connection, run_id: str) -> Any:
    found = find_run(conn, run_id)
    return runs.lock_run(conn, found.tenant_id, run_id)


def _open_runs(conn: Connection, name: str, paused: bool) -> list[Any]:
    c = workflow_runs.c
    q = select(workflow_runs).where(
        c.workflow_name == name,
        c.status.in_(OPEN),
        c.paused_by.is_not(None) if paused else c.paused_by.is_(None),
    )
    if not db.is_sqlite(conn):
        q = q.order_by(c.tenant_id, c.run_id).with_for_update()
    return list(conn.execute(q))


def _pause(conn: Connection, row: Any, by: str, actor: str | None) -> None:
    payload = ev.run_paused(row.workflow_name, row.step_index, by)
    runs.append_run_event(conn, row, ev.RUN_PAUSED, payload, actor)


def _unpause(conn: Connection, row: Any, actor: str | None) -> None:
    payload = ev.run_unpaused(row.workflow_name, row.step_index)
    runs.append_run_event(conn, row, ev.RUN_UNPAUSED, payload, actor)
    if row.status == RunStatus.RUNNING:
        schedule_advance(conn, row.tenant_id, row.run_id)
    elif row.status == RunStatus.QUEUED:
        _start_queued(conn, runs.lock_run(conn, row.tenant_id, row.run_id))


def _start_queued(conn: Connection, row: Any) -> None:
    """A queued run freed by a resume: a limited one waits for its key's slot
    (refilled now), a throttled or debounced one by its planned start (its
    row, signalled again by the resume), any other starts."""
    if rates.has_planned_start(conn, row):
        return
    if row.concurrency_key is not None and slots.limit_for(row.workflow_name) is not None:
        slots.refill(conn, (row.tenant_id, row.workflow_name, row.concurrency_key))
        return
    started = NewEvent(ev.RUN_STARTED, ev.started_from(row))
    runs.append_run_event(conn, row, started.type, started.payload)
    start_signal.signal(conn, row.tenant_id, [row.run_id])
