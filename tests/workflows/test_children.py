"""Child workflows (issue 18.7): `run_workflow` starts a child run whose id
derives from the parent's run and step; the parent suspends until the child
settles and takes its return value, or its failure (which a retry around the
step catches by starting a new child); a parent that is cancelled cancels
its open children."""

from __future__ import annotations

from datetime import timedelta

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, pending, run_events, runs, types
from webapp.workflows import operations
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import children as child_store
from webapp.workflows.store import run_events as ev


def doubler(**kw: object) -> wf.Workflow:
    return wf.workflow(
        "doubler",
        child=True,
        steps=[wf.ret(lambda ctx: ctx.trigger.payload["input"]["n"] * 2)],
        **kw,  # type: ignore[arg-type]
    )


def parent(steps: list | None = None, name: str = "parent") -> wf.Workflow:
    return wf.workflow(
        name,
        on="job.requested",
        steps=steps
        or [
            wf.run_workflow("doubler", input=lambda ctx: {"n": ctx.trigger.payload["n"]}),
            wf.ret(lambda ctx: ctx["doubler"] + 1),
        ],
    )


def test_a_parent_waits_for_its_child_and_takes_its_result(use_workflow, work):
    use_workflow(doubler())
    use_workflow(parent())
    emit("job.requested", {"n": 20})
    work()
    p, c = only_run("parent"), only_run("doubler")
    assert (p.status, p.results["return"]) == ("completed", 41)
    assert c.status == "completed" and c.parent_run_id == p.run_id
    assert c.run_id == child_store.child_run_id(p.run_id, 0, 1)  # from the parent's run and step
    started = [e for e in run_events(p.run_id) if e.type == ev.CHILD_STARTED]
    assert [e.payload for e in started] == [
        {
            "workflowName": "parent",
            "stepIndex": 0,
            "attempt": 1,
            "childRunId": c.run_id,
            "childWorkflow": "doubler",
            "input": {"n": 20},
            "wait": True,
        }
    ]
    assert types(c.run_id) == ["run-started", "run-completed", "child-settled"]
    settled = run_events(c.run_id)[-1].payload
    assert settled == {
        "workflowName": "doubler",
        "childRunId": c.run_id,
        "parentRunId": p.run_id,
        "parentStep": 0,
        "status": "completed",
    }
    assert types(p.run_id) == [
        "run-started",
        "child-started",
        "step.resumed",
        "run-completed",
    ]
    assert pending() == []


def test_a_child_that_waits_keeps_its_parent_suspended(use_workflow, work, clock):
    use_workflow(
        wf.workflow(
            "doubler",
            child=True,
            steps=[wf.wait("pause", "PT1H"), wf.ret(lambda ctx: 7)],
        )
    )
    use_workflow(parent())
    emit("job.requested", {"n": 1})
    work()
    assert (only_run("parent").status, only_run("doubler").status) == ("suspended", "suspended")
    clock.advance(timedelta(hours=2))
    sweep.sweep("default")
    work()
    assert only_run("doubler").status == "completed"
    assert only_run("parent").results["return"] == 8


def test_a_failed_child_fails_its_parent_at_the_step(use_workflow, work):
    def boom(ctx: object) -> None:
        raise RuntimeError("child broke")

    use_workflow(wf.workflow("doubler", child=True, steps=[wf.compute("x", boom)]))
    use_workflow(parent())
    emit("job.requested", {"n": 1})
    work()
    p = only_run("parent")
    assert only_run("doubler").status == "failed"
    assert (p.status, p.step_index) == ("failed", 0)
    assert "ChildWorkflowFailed" in (p.error or "")
    assert ev.CHILD_FAILED not in p.results


def test_a_retry_around_the_child_starts_a_new_child_per_attempt(use_workflow, work, clock):
    calls: list[int] = []

    def flaky(ctx: object) -> int:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("not yet")
        return 5

    use_workflow(
        wf.workflow(
            "doubler", child=True, steps=[wf.compute("x", flaky), wf.ret(lambda ctx: ctx["x"])]
        )
    )
    use_workflow(
        parent(
            [
                wf.retry(
                    "charge",
                    times=3,
                    backoff="linear",
                    do=[wf.run_workflow("doubler", input={"n": 0})],
                ),
                wf.ret(lambda ctx: ctx["charge"]),
            ]
        )
    )
    emit("job.requested", {"n": 0})
    work()
    for _ in range(2):
        clock.advance(timedelta(minutes=1))
        sweep.sweep("default")
        work()
    p = only_run("parent")
    assert (p.status, p.results["return"]) == ("completed", 5)
    children = sorted(runs("doubler"), key=lambda r: r.started_at)
    assert [c.status for c in children] == ["failed", "failed", "completed"]
    assert [c.run_id for c in children] == [
        child_store.child_run_id(p.run_id, 0, a) for a in (1, 2, 3)
    ]


def test_cancelling_a_parent_cancels_its_open_children_and_theirs(use_workflow, work):
    use_workflow(wf.workflow("grandchild", child=True, steps=[wf.wait("long", "P1D"), wf.ret(1)]))
    use_workflow(
        wf.workflow(
            "doubler",
            child=True,
            steps=[wf.run_workflow("grandchild"), wf.ret(lambda ctx: 2)],
        )
    )
    use_workflow(parent())
    emit("job.requested", {"n": 1})
    work()
    assert {r.workflow_name: r.status for r in runs()} == {
        "parent": "suspended",
        "doubler": "suspended",
        "grandchild": "suspended",
    }
    operations.cancel(only_run("parent").run_id)
    work()
    assert {r.workflow_name: (r.status, r.reason) for r in runs()} == {
        "parent": ("cancelled", "cancelled by operator"),
        "doubler": ("cancelled", ev.REASON_PARENT_SETTLED),
        "grandchild": ("cancelled", ev.REASON_PARENT_SETTLED),
    }
    assert pending() == []


def test_wait_false_goes_on_with_the_child_run_id(use_workflow, work):
    use_workflow(doubler())
    use_workflow(
        parent(
            [
                wf.run_workflow("doubler", input={"n": 4}, wait=False, name="spawn"),
                wf.ret(lambda ctx: ctx["spawn"]),
            ]
        )
    )
    emit("job.requested", {"n": 0})
    work()
    p, c = only_run("parent"), only_run("doubler")
    assert p.status == "completed" and p.results["return"] == c.run_id
    assert c.results["return"] == 8


def test_an_unregistered_child_fails_the_parents_step(use_workflow, work):
    use_workflow(parent())
    emit("job.requested", {"n": 1})
    work()
    p = only_run("parent")
    assert (p.status, p.step_index) == ("failed", 0) and "LookupError" in (p.error or "")


def test_run_workflow_is_checked_when_defined():
    with pytest.raises(wf.DefinitionError, match="not a workflow name"):
        wf.run_workflow("Bad Name")
    with pytest.raises(wf.DefinitionError, match="top-level"):
        parent([wf.branch("b", True, [wf.run_workflow("doubler")])])
    with pytest.raises(wf.DefinitionError, match="exactly one trigger"):
        wf.workflow("x", child=True, on="a", steps=[wf.ret(1)])


def test_show_gives_the_parent_and_the_children(use_workflow, work, runner):
    import json

    use_workflow(doubler())
    use_workflow(parent())
    emit("job.requested", {"n": 3})
    work()
    p, c = only_run("parent"), only_run("doubler")
    js = json.loads(runner.invoke(args=["workflows", "show", p.run_id, "--json"]).output)
    assert js["parent"] is None
    assert js["children"] == [{"runId": c.run_id, "workflow": "doubler", "status": "completed"}]
    text = runner.invoke(args=["workflows", "show", c.run_id]).output
    assert f"parent: {p.run_id}" in text
    assert (
        f"child: {c.run_id}  doubler  completed"
        in runner.invoke(args=["workflows", "show", p.run_id]).output
    )
