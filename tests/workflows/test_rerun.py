"""Rerun from a step (issue 18.10): a new run linked to the original
(`rerunOf`), the same trigger, the stored results of the steps before N."""

from __future__ import annotations

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, run_events, runs
from webapp.workflows import rerun
from webapp.workflows.operations import OperationError
from webapp.workflows.store import run_events as ev

CALLS: list[str] = []
BROKEN = {"ship": True}


def price(ctx):
    CALLS.append("price")
    return ctx.trigger.payload["n"] * 100


def ship(ctx):
    CALLS.append("ship")
    if BROKEN["ship"]:
        raise RuntimeError("carrier down")
    return f"shipped {ctx['price']}"


ORDER = wf.workflow(
    "rerun-order",
    on="order.made",
    steps=[wf.compute("price", price), wf.compute("ship", ship), wf.ret(lambda c: c["ship"])],
)


@pytest.fixture
def failed_run(use_workflow, work):
    CALLS.clear()
    BROKEN["ship"] = True
    use_workflow(ORDER)
    emit("order.made", {"n": 3})
    work()
    (run,) = runs("rerun-order")
    assert run.status == "failed" and CALLS == ["price", "ship"]
    return run


def test_rerun_from_a_step_reuses_the_earlier_results_and_links_the_original(
    failed_run, work, runner
):
    BROKEN["ship"] = False
    out = runner.invoke(args=["workflows", "rerun", failed_run.run_id, "--from-step", "1"])
    assert out.exit_code == 0, out.output
    work()
    new = next(r for r in runs("rerun-order") if r.run_id != failed_run.run_id)
    assert new.status == "completed" and new.results["return"] == "shipped 300"
    assert CALLS == ["price", "ship", "ship"]  # step 0 was not run again
    started = run_events(new.run_id)[0]
    assert started.type == ev.RUN_STARTED
    assert started.payload["rerunOf"] == failed_run.run_id and started.payload["fromStep"] == 1
    assert started.payload["triggerEventRef"] == failed_run.trigger_event_ref
    assert started.metadata["actor"].startswith("cli:")
    assert next(r for r in runs("rerun-order") if r.run_id == failed_run.run_id).status == "failed"


def test_rerun_from_step_0_runs_everything_again(failed_run, work):
    BROKEN["ship"] = False
    rerun.rerun(failed_run.run_id, 0)
    work()
    assert CALLS == ["price", "ship", "price", "ship"]


@pytest.mark.parametrize("bad", ["3", "-1", "x", "", "1.5"])
def test_a_wrong_step_is_refused(failed_run, runner, bad):
    out = runner.invoke(args=["workflows", "rerun", failed_run.run_id, "--from-step", bad])
    assert out.exit_code != 0 and "--from-step must be" in out.output
    assert len(runs("rerun-order")) == 1


def test_a_definition_changed_before_the_step_is_refused(failed_run, use_workflow):
    use_workflow(
        wf.workflow(
            "rerun-order",
            on="order.made",
            steps=[wf.compute("price", lambda c: 1), wf.compute("ship", ship), wf.ret(None)],
        )
    )
    with pytest.raises(OperationError, match="changed before step 1"):
        rerun.rerun(failed_run.run_id, 1)
    assert len(runs("rerun-order")) == 1


def test_an_unknown_run_is_refused():
    with pytest.raises(OperationError, match="no run"):
        rerun.rerun("00000000-0000-0000-0000-000000000000", 0)
