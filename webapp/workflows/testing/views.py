"""A run as a test sees it (status, results, events), and the next wake-up
in the pending table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from webapp.eventstore import Event, StreamId, read_stream
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import SLOT_WAIT, workflow_run_pending, workflow_runs


@dataclass(frozen=True)
class Run:
    run_id: str
    workflow: str
    version: int  # the workflow version the run started on
    status: str  # queued | running | suspended | completed | failed | cancelled | skipped
    step_index: int
    results: dict[str, Any]
    error: str | None
    reason: str | None
    events: list[Event]

    @property
    def types(self) -> list[str]:
        """The run's event types in order, e.g. `workflow.step.waiting`."""
        return [e.type for e in self.events]

    @property
    def returned(self) -> Any:
        """What the run's `ret` step returned (None while it has not)."""
        return self.results.get("return")


def _view(conn: Connection, row: Any) -> Run:
    events = read_stream(conn, StreamId(row.tenant_id, ev.AGGREGATE_TYPE, row.run_id))
    return Run(
        row.run_id,
        row.workflow_name,
        row.definition_version,
        row.status,
        row.step_index,
        dict(row.results or {}),
        row.error,
        row.reason,
        events,
    )


def one(conn: Connection, tenant_id: str, run_id: str) -> Run | None:
    row = conn.execute(
        select(workflow_runs).where(
            workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id
        )
    ).first()
    return None if row is None else _view(conn, row)


def all_runs(conn: Connection, tenant_id: str, workflow: str | None) -> list[Run]:
    q = select(workflow_runs).where(workflow_runs.c.tenant_id == tenant_id)
    if workflow is not None:
        q = q.where(workflow_runs.c.workflow_name == workflow)
    q = q.order_by(workflow_runs.c.started_at, workflow_runs.c.started_position)
    return [_view(conn, row) for row in conn.execute(q)]


def next_wake(conn: Connection, after: datetime) -> datetime | None:
    """The earliest wake-up after `after` of any pending row (a wait, a
    timeout, a retry backoff): where `advance` stops next."""
    return conn.execute(
        select(func.min(workflow_run_pending.c.wake_at)).where(
            workflow_run_pending.c.wake_at > after,
            workflow_run_pending.c.wake_at < SLOT_WAIT,  # not a row waiting for an event or a slot
        )
    ).scalar()
