"""The engine runs on the database alone: a run started, suspended by a wait,
resumed and completed with no Redis, no worker and no Flask app. The store
signals each wake-up to whatever listener is installed (here a list); with
none, nothing is signalled and the sweep would find the due row."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import has_app_context
from sqlalchemy import select

import webapp.workflows as wf
from tests.support.database import clean_database
from webapp.core import db
from webapp.core.clock import FrozenClock
from webapp.eventstore import NewEvent, StreamId, append
from webapp.workflows.definition import catalog
from webapp.workflows.engine import resume
from webapp.workflows.store import projection, runs, wake_signal
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

FLOW = wf.workflow(
    "no-redis",
    on="thing.ordered",
    steps=[
        wf.compute("double", lambda ctx: ctx.trigger.payload["n"] * 2),
        wf.wait("cool-off", "PT1H"),
        wf.ret(lambda ctx: ctx["double"] + 1),
    ],
)

Signal = tuple[str, str, int, datetime]


@pytest.fixture
def engine_only(database_url: str, clock: FrozenClock) -> Iterator[list[Signal]]:
    """The database and the run projection, no app: every wake-up recorded."""
    db.init_engine(database_url)
    clean_database()
    projection.register()
    catalog.put(FLOW)
    signals: list[Signal] = []
    previous = wake_signal.listen(lambda *s: signals.append(s))
    try:
        yield signals
    finally:
        wake_signal.listen(previous)
        catalog.pop(FLOW.name)
        clean_database()


def start(n: int) -> str:
    with db.transaction() as conn:
        trigger = append(
            conn, StreamId("default", "thing", "t1"), [NewEvent("thing.ordered", {"n": n})], 0
        )[0]
        run_id = ev.run_id_for(FLOW.name, None)
        started = ev.run_started(FLOW.name, trigger.type, trigger.ref, FLOW.fingerprint, None)
        append(conn, runs.stream("default", run_id), [NewEvent(ev.RUN_STARTED, started)], 0)
    return run_id


def run_row(run_id: str) -> Any:
    with db.reading() as conn:
        return conn.execute(select(workflow_runs).where(workflow_runs.c.run_id == run_id)).one()


def test_a_run_suspends_resumes_and_completes_on_the_database_alone(
    engine_only: list[Signal], clock: FrozenClock
) -> None:
    assert not has_app_context()
    run_id = start(20)

    assert resume.advance("default", run_id) == "suspended"
    row = run_row(run_id)
    assert (row.status, row.step_index, row.results["double"]) == ("suspended", 1, 40)
    wake_at = clock.now() + timedelta(hours=1)
    # the pending row it wrote is signalled after commit, once
    assert engine_only == [("default", run_id, 1, wake_at)]
    with db.reading() as conn:
        due = conn.execute(select(workflow_run_pending.c.wake_at)).scalars().all()
    assert due == [wake_at]

    assert resume.resume_run("default", run_id, 1) == "not-due"
    assert run_row(run_id).status == "suspended"

    clock.advance(3600)
    assert resume.resume_run("default", run_id, 1) == "resumed"
    row = run_row(run_id)
    assert (row.status, row.results["return"]) == ("completed", 41)
    with db.reading() as conn:
        assert conn.execute(select(workflow_run_pending)).all() == []


def test_without_a_listener_nothing_is_signalled_and_the_row_stays_due(
    engine_only: list[Signal], clock: FrozenClock
) -> None:
    with wake_signal.muted():
        run_id = start(1)
        assert resume.advance("default", run_id) == "suspended"
    assert engine_only == []
    clock.advance(3600)
    # what the minute sweep does: the due row is found in the table
    assert resume.resume_run("default", run_id, 1) == "resumed"
    assert run_row(run_id).status == "completed"
