"""A run's deadline (`timeout=`, issue 18.8) and cancel-on events
(`cancel_on=[on(...)]`, 18.6): both are rows of the pending set below step 0,
served by the timer, the wake-up and the claim like the run's own waits."""

from __future__ import annotations

from datetime import timedelta

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, pending, run_events, runs, types
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import run_events as ev

match = wf.match


def sleeper(**controls: object) -> wf.Workflow:
    return wf.workflow(
        "sleeper",
        on="order.placed",
        awaits={"paid": "order.paid"},
        steps=[
            wf.wait_for_event(
                "paid",
                event="paid",
                match=lambda ctx: match.eq("orderId", ctx.trigger.payload["orderId"]),
                timeout="P1D",
            ),
            wf.ret(lambda ctx: ctx["paid"]["amount"]),
        ],
        **controls,  # type: ignore[arg-type]
    )


def by_order(order_id: str) -> object:
    for r in runs("sleeper"):
        if r.subject_id == order_id:
            return r
    raise AssertionError(f"no run for {order_id}")


def cancelled_on_order(ctx: object) -> object:
    return match.eq("orderId", ctx.trigger.payload["orderId"])  # type: ignore[attr-defined]


def test_a_run_past_its_deadline_fails_with_deadline_exceeded(use_workflow, work, clock):
    use_workflow(sleeper(timeout="PT1H"))
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    work()
    run = only_run("sleeper")
    assert run.status == "suspended"
    started = run_events(run.run_id)[0]
    assert started.payload["deadlineAt"] == (clock.now() + timedelta(hours=1)).isoformat()
    kinds = sorted(p.suspension_event_type for p in pending())
    assert kinds == [ev.DEADLINE, ev.STEP_WAITING_FOR_EVENT]

    clock.advance(timedelta(minutes=59))
    sweep.sweep("default")
    work()
    assert only_run("sleeper").status == "suspended"  # not yet

    clock.advance(timedelta(minutes=2))
    sweep.sweep("default")
    work()
    run = only_run("sleeper")
    assert (run.status, run.reason) == ("failed", ev.REASON_DEADLINE)
    last = run_events(run.run_id)[-1]
    assert last.type == ev.RUN_FAILED and last.payload["reason"] == "deadline_exceeded"
    assert last.payload["stepIndex"] == 0  # where the run stood, not the control's row
    assert pending() == []  # its wait went with it


def test_a_run_that_settles_in_time_leaves_no_deadline_behind(use_workflow, work, clock):
    use_workflow(sleeper(timeout="PT1H"))
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    work()
    emit("order.paid", {"orderId": "o1", "amount": 12}, aggregate_id="o1")
    work()
    run = only_run("sleeper")
    assert run.status == "completed" and run.results["return"] == 12
    assert pending() == []
    clock.advance(timedelta(hours=2))
    sweep.sweep("default")
    work()
    assert only_run("sleeper").status == "completed"
    assert types(run.run_id)[-1] == "run-completed"


def test_a_pure_run_settled_under_its_lease_drops_its_deadline(use_workflow, work):
    use_workflow(
        wf.workflow(
            "quick",
            on="order.placed",
            timeout="PT1H",
            steps=[wf.compute("double", lambda ctx: 2), wf.ret(lambda ctx: ctx["double"])],
        )
    )
    emit("order.placed", {"orderId": "o1"})
    work()
    assert only_run("quick").status == "completed"
    assert pending() == []


def test_a_queued_run_past_its_deadline_fails_too(use_workflow, work, clock):
    use_workflow(
        sleeper(
            timeout="PT1H",
            concurrency=wf.limit(max=1, key=lambda e: "all"),
        )
    )
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    emit("order.placed", {"orderId": "o2"}, aggregate_id="o2")
    work()
    assert sorted(r.status for r in runs("sleeper")) == ["queued", "suspended"]
    clock.advance(timedelta(hours=2))
    sweep.sweep("default")
    work()
    sweep.sweep("default")
    work()
    assert [(r.status, r.reason) for r in runs("sleeper")] == [
        ("failed", ev.REASON_DEADLINE),
        ("failed", ev.REASON_DEADLINE),
    ]
    assert pending() == []


def test_a_matching_event_cancels_the_open_run_and_only_that_one(use_workflow, work):
    use_workflow(sleeper(cancel_on=[wf.on("order.cancelled", match=cancelled_on_order)]))
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    emit("order.placed", {"orderId": "o2"}, aggregate_id="o2")
    work()
    assert [r.status for r in runs("sleeper")] == ["suspended", "suspended"]
    cancel = emit("order.cancelled", {"orderId": "o1"}, aggregate_id="o1")
    work()
    one, two = by_order("o1"), by_order("o2")
    assert (one.status, two.status) == ("cancelled", "suspended")
    last = run_events(one.run_id)[-1]
    assert last.type == ev.RUN_CANCELLED
    assert last.payload["reason"] == "cancelled_by_event"
    assert last.payload["eventId"] == cancel.id
    assert {p.run_id for p in pending()} == {two.run_id}  # o1's wait and watch are gone
    emit("order.paid", {"orderId": "o2", "amount": 5}, aggregate_id="o2")
    work()
    assert by_order("o2").status == "completed"


def test_a_cancel_event_that_came_before_the_run_started_still_cancels_it(use_workflow, work):
    """The trigger projection starts runs after the fact: the cancel event is
    already in the log when the run is created, and the look-back finds it."""
    use_workflow(sleeper(cancel_on=[wf.on("order.cancelled", match=cancelled_on_order)]))
    emit("order.cancelled", {"orderId": "o1"}, aggregate_id="o1")  # before the trigger: ignored
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    emit("order.placed", {"orderId": "o2"}, aggregate_id="o2")
    work()
    assert {r.subject_id: r.status for r in runs("sleeper")} == {
        "o1": "suspended",
        "o2": "suspended",
    }
    emit("order.placed", {"orderId": "o3"}, aggregate_id="o3")
    late = emit("order.cancelled", {"orderId": "o3"}, aggregate_id="o3")
    work()  # o3's run is created after its cancel event was appended
    three = by_order("o3")
    assert three.status == "cancelled"
    assert run_events(three.run_id)[-1].payload["eventId"] == late.id
    assert by_order("o1").status == "suspended"


def test_a_cancel_event_during_a_retry_backoff_cancels_the_run(use_workflow, work, clock):
    calls: list[int] = []

    def flaky(ctx: object) -> None:
        calls.append(1)
        raise RuntimeError("down")

    use_workflow(
        wf.workflow(
            "charger",
            on="order.placed",
            cancel_on=[wf.on("order.cancelled", match=cancelled_on_order)],
            steps=[wf.retry("charge", times=3, backoff="linear", do=[wf.compute("c", flaky)])],
        )
    )
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    work()
    run = only_run("charger")
    assert run.status == "suspended" and types(run.run_id)[-1] == "retry.scheduled"
    emit("order.cancelled", {"orderId": "o1"}, aggregate_id="o1")
    work()
    clock.advance(timedelta(minutes=5))
    sweep.sweep("default")
    work()
    run = only_run("charger")
    assert run.status == "cancelled" and len(calls) == 1  # the backoff never ran again
    assert pending() == []


def test_a_match_function_that_raises_fails_the_trigger_and_blocks_nothing(use_workflow, work):
    def broken(ctx: object) -> object:
        raise KeyError("orderId")

    use_workflow(sleeper(cancel_on=[wf.on("order.cancelled", match=broken)]))
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    work()
    run = only_run("sleeper")
    assert run.status == "failed" and "ControlError" in (run.error or "")


@pytest.mark.parametrize(
    ("controls", "message"),
    [
        ({"timeout": "soon"}, "timeout= takes an ISO-8601 duration"),
        ({"timeout": "PT0S"}, "timeout= must be above zero"),
        ({"timeout": 5}, "timeout= takes an ISO-8601 duration"),
        ({"cancel_on": "order.cancelled"}, "cancel_on= takes a list of on("),
        ({"cancel_on": [wf.on("x")] * 21}, "at most 20"),
    ],
)
def test_wrong_controls_are_refused_naming_the_field(controls, message):
    with pytest.raises(wf.DefinitionError, match=message.replace("(", r"\(")):
        sleeper(**controls)


def test_on_refuses_a_bad_event_type_or_match():
    with pytest.raises(wf.DefinitionError, match="event type"):
        wf.on("")
    with pytest.raises(wf.DefinitionError, match="match"):
        wf.on("order.cancelled", match={"kind": "nonsense"})


def test_show_names_the_deadline_and_the_cancelling_event(use_workflow, work, runner):
    use_workflow(
        sleeper(timeout="PT1H", cancel_on=[wf.on("order.cancelled", match=cancelled_on_order)])
    )
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    work()
    out = runner.invoke(args=["workflows", "show", only_run("sleeper").run_id]).output
    assert "  deadline: " in out and "  cancelled by: event order.cancelled" in out
    assert "waits: step 0 for event order.paid" in out


def test_a_rerun_gets_its_own_deadline_from_when_it_starts(use_workflow, work, clock, runner):
    use_workflow(sleeper(timeout="PT1H"))
    emit("order.placed", {"orderId": "o1"}, aggregate_id="o1")
    work()
    clock.advance(timedelta(hours=2))
    sweep.sweep("default")
    work()
    original = only_run("sleeper")
    assert original.reason == ev.REASON_DEADLINE
    out = runner.invoke(args=["workflows", "rerun", original.run_id, "--from-step", "0"])
    assert out.exit_code == 0, out.output
    rerun = next(r for r in runs("sleeper") if r.run_id != original.run_id)
    started = run_events(rerun.run_id)[0]
    assert started.payload["rerunOf"] == original.run_id
    assert started.payload["deadlineAt"] == (clock.now() + timedelta(hours=1)).isoformat()
    work()
    assert next(r for r in runs("sleeper") if r.run_id == rerun.run_id).status == "suspended"
