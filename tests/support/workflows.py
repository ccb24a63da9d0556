"""Workflow test helpers: the `use_workflow` fixture (register workflows for
one test), emitting events, reading a run's events, rows and pending rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from webapp.core import db
from webapp.eventstore import ANY, Event, NewEvent, StreamId, append, projections, read_stream
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs


@pytest.fixture
def use_workflow(app: Any) -> Iterator[Any]:
    """Register workflows for this test only: `use_workflow(definition)`."""
    names: list[str] = []

    def reg(definition: Any) -> Any:
        names.append(definition.name)
        wf.register(definition)
        projections.ensure_cursors()
        return definition

    yield reg
    for name in names:
        wf.unregister(name)


def emit(
    event_type: str, payload: dict[str, Any], aggregate_id: str = "a1", tenant: str = "default"
) -> Event:
    with db.transaction() as conn:
        return append(
            conn, StreamId(tenant, "thing", aggregate_id), [NewEvent(event_type, payload)], ANY
        )[0]


def run_events(run_id: str, tenant: str = "default") -> list[Event]:
    with db.reading() as conn:
        return read_stream(conn, StreamId(tenant, ev.AGGREGATE_TYPE, run_id))


def types(run_id: str) -> list[str]:
    return [e.type.removeprefix("workflow.") for e in run_events(run_id)]


def runs(name: str | None = None) -> list[Any]:
    with db.reading() as conn:
        q = select(workflow_runs)
        if name:
            q = q.where(workflow_runs.c.workflow_name == name)
        return list(conn.execute(q))


def pending() -> list[Any]:
    with db.reading() as conn:
        return list(
            conn.execute(select(workflow_run_pending).order_by(workflow_run_pending.c.wake_at))
        )


def only_run(name: str) -> Any:
    rs = runs(name)
    assert len(rs) == 1, rs
    return rs[0]
