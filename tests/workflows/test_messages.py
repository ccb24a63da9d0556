"""Signals, state, updates and progress in the test harness: bad input is
refused with a clear error and stores nothing; a subject's erasure erases the
run's state, its messages' payloads and its progress data; the progress
bounds fail the step that passes them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from webapp.core import db
from webapp.eventstore import ANY, NewEvent, StreamId, append
from webapp.workflows.store.tables import workflow_run_messages, workflow_run_progress
from webapp.workflows.testing import WorkflowTest


def _emit_three(ctx: Any) -> int:
    for i in range(3):
        ctx.emit("step", {"secret": f"value {i}"})
    return 3


FLOW = wf.workflow(
    "talkative",
    on="talk.started",
    steps=[
        wf.compute("emit", _emit_three),
        wf.set_state("mark", "stage", lambda ctx: {"who": ctx.trigger.aggregate_id}),
        wf.wait_for_signal("go", timeout="P1D"),
        wf.ret("done"),
    ],
)


def _rows(table: Any) -> list[Any]:
    with db.reading() as conn:
        return list(conn.execute(select(table)))


def test_bad_messages_are_refused_and_store_nothing() -> None:
    with WorkflowTest(FLOW) as t:
        t.publish("talk.started", "customer/u1", {})
        (run,) = t.runs()
        for name, payload, key in [
            ("", None, None),
            ("x" * 201, None, None),
            (7, None, None),
            ("go", object(), None),
            ("go", "x" * 70_000, None),
            ("go", None, ""),
        ]:
            with pytest.raises(wf.MessageError):
                wf.signal(run.run_id, name, payload, key=key)
        with pytest.raises(wf.RunNotFound):
            wf.signal("not-a-uuid", "go")
        with pytest.raises(wf.RunNotFound):
            wf.update("00000000-0000-4000-8000-000000000000", "go")
        with pytest.raises(wf.RunNotFound):
            wf.state("00000000-0000-4000-8000-000000000000")
        assert _rows(workflow_run_messages) == []
        assert t.run(run.run_id).status == "suspended"


def test_erasing_the_subject_erases_state_messages_and_progress() -> None:
    with WorkflowTest(FLOW) as t:
        t.publish("talk.started", "customer/u1", {})
        (run,) = t.runs()
        assert t.state(run.run_id) == {"stage": {"who": "u1"}}
        wf.signal(run.run_id, "later", {"secret": "kept until erased"})
        assert [p.data for p in _rows(workflow_run_progress)] == [
            {"secret": f"value {i}"} for i in range(3)
        ]
        with db.transaction() as conn:  # what account erasure appends
            append(conn, StreamId("default", "user", "u1"), [NewEvent("user.erased", {})], ANY)
        t.run_until_idle()
        assert t.state(run.run_id) == {}
        assert [m.payload for m in _rows(workflow_run_messages)] == [None]
        assert [p.data for p in _rows(workflow_run_progress)] == [None, None, None]
        assert t.run(run.run_id).status == "cancelled"


def test_a_step_past_the_progress_bounds_fails() -> None:
    with WorkflowTest(FLOW, config={"workflow_progress_max_entries": 2}) as t:
        t.publish("talk.started", "customer/u2", {})
        (run,) = t.runs()
        assert run.status == "failed"
        assert run.error == "workflow step failed (ProgressLimitExceeded)"
        assert len(_rows(workflow_run_progress)) == 2


def test_the_progress_bytes_bound_fails_the_step_too() -> None:
    with WorkflowTest(FLOW, config={"workflow_progress_max_bytes": 1024}) as t:
        t.publish("talk.started", "customer/u3", {})
        assert len(_rows(workflow_run_progress)) == 3  # 3 x ~20 bytes fit
    big = wf.workflow(
        "chatty",
        on="talk.big",
        steps=[wf.compute("emit", lambda ctx: ctx.emit("blob", "x" * 2000))],
    )
    with WorkflowTest(big, config={"workflow_progress_max_bytes": 1024}) as t:
        t.publish("talk.big", "customer/u4", {})
        (run,) = t.runs()
        assert run.error == "workflow step failed (ProgressLimitExceeded)"
