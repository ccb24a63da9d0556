"""Pause and resume (issue 18.9): a paused run takes no step; timers and
awaited events that fall due meanwhile are kept and handled on resume; a
paused workflow pauses its open runs and queues new triggers."""

from __future__ import annotations

from datetime import timedelta

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, pending, run_events, runs, types
from webapp.core import db
from webapp.workflows import pausing
from webapp.workflows.definition.model import RunContext
from webapp.workflows.dispatch import sweep
from webapp.workflows.engine import resume, stops
from webapp.workflows.engine.stops import RunResult
from webapp.workflows.operations import OperationError
from webapp.workflows.store import run_events as ev


def napper(name: str = "napper") -> wf.Workflow:
    return wf.workflow(
        name,
        on="nap.requested",
        awaits={"poke": "nap.poked"},
        steps=[
            wf.wait("nap", "PT1H"),
            wf.wait_for_event("poked", event="poke", timeout="P1D"),
            wf.ret(lambda ctx: ctx["poked"]["v"]),
        ],
    )


def test_a_paused_waiting_run_keeps_its_timer_and_event_and_goes_on_when_resumed(
    use_workflow, work, clock, runner
):
    use_workflow(napper())
    emit("nap.requested", {})
    work()
    run = only_run("napper")
    assert runner.invoke(args=["workflows", "pause", run.run_id]).exit_code == 0
    paused = run_events(run.run_id)[-1]
    assert paused.type == ev.RUN_PAUSED and paused.payload["by"] == "run"
    assert paused.metadata["actor"].startswith("cli:")
    clock.advance(timedelta(hours=2))  # the timer falls due while paused
    sweep.sweep("default")
    work()
    assert only_run("napper").status == "suspended" and only_run("napper").step_index == 0
    assert [p.paused for p in pending()] == [True]
    again = runner.invoke(args=["workflows", "pause", run.run_id])
    assert again.exit_code != 0 and "already paused" in again.output

    assert runner.invoke(args=["workflows", "resume", run.run_id]).exit_code == 0
    work()
    assert only_run("napper").step_index == 1  # the kept timer was handled at once
    assert runner.invoke(args=["workflows", "pause", run.run_id]).exit_code == 0
    emit("nap.poked", {"v": 7}, aggregate_id="p1")  # the awaited event, while paused
    work()
    assert only_run("napper").status == "suspended"
    assert runner.invoke(args=["workflows", "resume", run.run_id]).exit_code == 0
    work()
    done = only_run("napper")
    assert done.status == "completed" and done.results["return"] == 7
    assert types(run.run_id).count("run-paused") == 2
    assert types(run.run_id).count("run-unpaused") == 2
    not_paused = runner.invoke(args=["workflows", "resume", run.run_id])
    assert not_paused.exit_code != 0 and "is not paused" in not_paused.output
    settled = runner.invoke(args=["workflows", "pause", run.run_id])
    assert settled.exit_code != 0 and "already completed" in settled.output


def test_a_pause_while_the_claim_is_in_flight_stops_the_run_before_its_next_commit(
    use_workflow, work, clock
):
    """The claim took the lease; the pause lands before the continuation
    commits: that commit is refused (lost), nothing runs, and the resume
    carries the run on from its last committed step."""
    use_workflow(
        wf.workflow(
            "quick",
            on="quick.requested",
            steps=[
                wf.wait("p", "PT1M"),
                wf.compute("x", lambda ctx: 41),
                wf.ret(lambda c: c["x"] + 1),
            ],
        )
    )
    emit("quick.requested", {})
    work()
    run = only_run("quick")
    clock.advance(timedelta(minutes=2))
    with db.transaction() as conn:  # the claim, without its continuation
        (claim,) = resume.claim_due(conn, "default", [(run.run_id, 0)])[2]
    assert claim.state is not None and only_run("quick").status == "running"
    pausing.pause(run.run_id)
    state = claim.state
    ctx = RunContext("default", state.run_id, state.wf.name, state.trigger, state.results)
    stop = stops.completed(ctx, state.wf, state.token)
    assert stops.finish_many("default", [stop])[run.run_id] == RunResult.LOST
    assert only_run("quick").status == "running" and only_run("quick").paused_by == "run"
    assert resume.advance("default", run.run_id) == "paused"
    pausing.unpause(run.run_id)
    work()
    done = only_run("quick")
    assert done.status == "completed" and done.results["return"] == 42


def test_a_paused_workflow_pauses_its_runs_and_queues_new_triggers(
    use_workflow, work, clock, runner
):
    use_workflow(napper())
    emit("nap.requested", {}, aggregate_id="n1")
    work()
    out = runner.invoke(args=["workflows", "pause-workflow", "napper"])
    assert out.exit_code == 0 and "1 open runs paused" in out.output
    emit("nap.requested", {}, aggregate_id="n2")
    work()
    by_status = sorted((r.status, r.paused_by) for r in runs("napper"))
    assert by_status == [("queued", "workflow"), ("suspended", "workflow")]
    queued = next(r for r in runs("napper") if r.status == "queued")
    assert run_events(queued.run_id)[0].type == ev.RUN_QUEUED
    held = runner.invoke(args=["workflows", "resume", queued.run_id])
    assert held.exit_code != 0 and "resume-workflow" in held.output
    assert runner.invoke(args=["workflows", "pause-workflow", "napper"]).exit_code != 0
    clock.advance(timedelta(hours=2))
    sweep.sweep("default")
    work()
    assert all(r.step_index == 0 for r in runs("napper"))

    out = runner.invoke(args=["workflows", "resume-workflow", "napper"])
    assert out.exit_code == 0 and "2 runs resumed" in out.output
    work()
    statuses = {r.run_id: (r.status, r.step_index) for r in runs("napper")}
    assert statuses[queued.run_id] == ("suspended", 0)  # started now; its own hour begins
    assert sorted(statuses.values()) == [("suspended", 0), ("suspended", 1)]
    assert runner.invoke(args=["workflows", "resume-workflow", "napper"]).exit_code != 0


def test_pausing_an_unknown_run_says_so():
    with pytest.raises(OperationError, match="no run"):
        pausing.pause("00000000-0000-0000-0000-000000000000")
