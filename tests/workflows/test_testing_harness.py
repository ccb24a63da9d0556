"""The workflow test harness (`webapp.workflows.testing`) tests itself: timers,
waits for events with timeouts, retries with backoff, cron ticks, webhook
starts, captured mails and webhooks, failures, and that it leaves the process
as it found it. Time is skipped: a wait completes after `advance`, not before."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, runs
from webapp import mail
from webapp.core import clock, db
from webapp.core import clock as clock_mod
from webapp.jobs import queue as jobs_queue
from webapp.workflows.dispatch import signals
from webapp.workflows.interpreter import webhook
from webapp.workflows.store import wake_signal
from webapp.workflows.testing import WorkflowTest

NIGHTLY = wf.workflow(
    "harness-nightly",
    cron="0 3 * * *",
    steps=[wf.ret(lambda ctx: {"tick": ctx.trigger.payload["tick"]})],
)


def sleeper(duration: Any) -> wf.Workflow:
    return wf.workflow(
        "harness-sleeper",
        on="thing.started",
        steps=[wf.wait("nap", duration), wf.ret(lambda ctx: "woke")],
    )


def only(t: WorkflowTest) -> Any:
    (run,) = t.runs()
    return run


@pytest.mark.parametrize("step", ["PT24H", timedelta(hours=24), 86400])
def test_a_one_day_wait_completes_after_advancing_a_day_and_not_before(step: Any) -> None:
    with WorkflowTest(sleeper("P1D")) as t:
        t.publish("thing.started", "thing/1")
        assert only(t).status == "suspended"
        t.advance("PT23H59M59S")
        assert only(t).status == "suspended"
        t.advance(1)
        assert (only(t).status, only(t).returned) == ("completed", "woke")
    with WorkflowTest(sleeper("P1D")) as t:  # each form of duration moves the clock as far
        t.publish("thing.started", "thing/1")
        t.advance(step)
        assert only(t).status == "completed"


def test_the_clock_is_frozen_between_advances_and_moves_by_exactly_the_step() -> None:
    with WorkflowTest(sleeper("PT1H")) as t:
        start = clock.now()
        t.publish("thing.started", "thing/1")
        t.run_until_idle()
        assert clock.now() == start
        t.advance("PT90M")
        assert clock.now() == start + timedelta(minutes=90)
        with pytest.raises(ValueError, match="forward"):
            t.advance(-1)


def test_a_naive_start_or_an_unstarted_harness_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        WorkflowTest(sleeper("PT1H"), start=datetime(2026, 1, 1))
    with pytest.raises(RuntimeError, match="start the WorkflowTest first"):
        _ = WorkflowTest(sleeper("PT1H")).app
    start = datetime(2030, 6, 1, tzinfo=UTC)
    with WorkflowTest(sleeper("PT1H"), start=start) as t:
        assert clock.now() == start == t.clock.now()


WAITER = wf.workflow(
    "harness-waiter",
    on="order.placed",
    awaits={"paid": "order.paid"},
    steps=[
        wf.wait_for_event(
            "paid",
            event="paid",
            timeout="PT2H",
            match=lambda ctx: wf.match.eq("order", ctx.trigger.aggregate_id),
        ),
        wf.ret(lambda ctx: {"paid": ctx["paid"]}),
    ],
)


def test_a_matching_event_wakes_a_wait_before_its_timeout() -> None:
    with WorkflowTest(WAITER) as t:
        t.publish("order.placed", "order/42")
        t.publish("order.paid", "payment/1", {"order": "41"})  # another order: no match
        assert only(t).status == "suspended"
        t.publish("order.paid", "payment/2", {"order": "42", "amount": 5})
        assert only(t).status == "completed"
        assert only(t).returned == {"paid": {"order": "42", "amount": 5}}


def test_a_wait_for_an_event_times_out_when_the_clock_passes_its_timeout() -> None:
    with WorkflowTest(WAITER) as t:
        t.publish("order.placed", "order/42")
        t.advance("PT1H59M")
        assert only(t).status == "suspended"
        t.advance("PT1M")
        assert (only(t).status, only(t).returned) == ("completed", {"paid": None})


def flaky(fail_until: int, times: int = 5) -> wf.Workflow:
    def call_out(ctx: Any) -> int:
        if ctx.attempt < fail_until:
            raise RuntimeError("service unavailable")
        return ctx.attempt

    return wf.workflow(
        "harness-flaky",
        on="thing.started",
        steps=[
            wf.retry("call", times=times, backoff="exponential", do=[wf.compute("out", call_out)]),
            wf.ret(lambda ctx: ctx["out"]),
        ],
    )


def test_retries_wait_out_their_exponential_backoff() -> None:
    with WorkflowTest(flaky(fail_until=4)) as t:
        t.publish("thing.started", "thing/1")
        t.advance("PT69S")  # 10 s + 20 s + 40 s of backoff: the third retry is due at 70 s
        assert only(t).status == "suspended"
        t.advance("PT1S")
        run = only(t)
        assert (run.status, run.returned) == ("completed", 4)
        scheduled = [e.payload for e in run.events if e.type == "workflow.retry.scheduled"]
        assert [p["attempt"] for p in scheduled] == [2, 3, 4]  # the attempt each one schedules


def test_retries_that_run_out_fail_the_run_with_the_step_error() -> None:
    with WorkflowTest(flaky(fail_until=99, times=3)) as t:
        t.publish("thing.started", "thing/1")
        t.advance("PT10M")
        run = only(t)
        assert run.status == "failed"
        assert run.types[-1] == "workflow.run-failed"
        assert "RuntimeError" in (run.error or "")


def test_a_cron_tick_starts_one_run_per_tick() -> None:
    with WorkflowTest(NIGHTLY) as t:
        run_id = t.start_cron_tick()
        assert run_id is not None
        assert t.run(run_id).status == "completed"
        assert t.run(run_id).returned == {"tick": clock.now().replace(second=0).isoformat()}
        assert t.start_cron_tick("harness-nightly") is None  # the same tick: nothing new
        t.advance("P1D")
        assert t.start_cron_tick() not in (None, run_id)
        assert [r.status for r in t.runs()] == ["completed", "completed"]


def test_mails_are_captured_not_sent() -> None:
    flow = wf.workflow(
        "harness-mailer",
        on="thing.started",
        steps=[
            wf.send_mail(
                "hello",
                to=lambda ctx: ctx.trigger.payload["to"],
                subject="Welcome",
                body=lambda ctx: f"Hello {ctx.trigger.aggregate_id}",
            )
        ],
    )
    with WorkflowTest(flow) as t:
        t.publish("thing.started", "thing/ada", {"to": "ada@example.com"})
        assert [(m.to, m.subject, m.body) for m in t.mails] == [
            ("ada@example.com", "Welcome", "Hello ada")
        ]


HOOK = wf.workflow(
    "harness-hook",
    on="thing.started",
    steps=[
        wf.send_webhook(
            "notify",
            url="https://hooks.example.com/in",
            body=lambda ctx: {"thing": ctx.trigger.aggregate_id},
            auth={"bearer": "partner"},
            retry=2,
        ),
        wf.ret(lambda ctx: ctx["notify"]),
    ],
)


def test_webhook_requests_are_captured_with_their_body_and_headers() -> None:
    with WorkflowTest(HOOK, secrets={"partner": "tok"}, webhooks=lambda c: (201, {"id": 7})) as t:
        t.publish("thing.started", "thing/9")
        (call,) = t.webhooks
        assert (call.method, call.url, call.json) == (
            "POST",
            "https://hooks.example.com/in",
            {"thing": "9"},
        )
        assert call.headers["authorization"] == "Bearer tok"
        assert only(t).returned == {"status": 201, "body": {"id": 7}}


def test_a_5xx_is_retried_in_place_and_a_4xx_fails_the_run() -> None:
    answers = iter([503, 200])
    with WorkflowTest(HOOK, secrets={"partner": "tok"}, webhooks=lambda c: next(answers)) as t:
        t.publish("thing.started", "thing/1")
        assert len(t.webhooks) == 2 and only(t).status == "completed"
    with WorkflowTest(HOOK, secrets={"partner": "tok"}) as t:
        t.respond_webhooks(lambda c: 404)
        t.publish("thing.started", "thing/1")
        assert len(t.webhooks) == 1
        assert (only(t).status, only(t).types[-1]) == ("failed", "workflow.run-failed")


def test_a_webhook_workflow_starts_on_a_received_call() -> None:
    flow = wf.workflow(
        "harness-paid",
        webhook="billing/paid",
        steps=[wf.ret(lambda ctx: ctx.trigger.payload["body"]["invoice"])],
    )
    with WorkflowTest(flow) as t:
        t.receive_webhook("billing/paid", {"invoice": "in_1"})
        assert (only(t).status, only(t).returned) == ("completed", "in_1")
        with pytest.raises(LookupError):
            t.receive_webhook("billing/other", {})


def test_each_harness_has_its_own_empty_database_and_runs_only_its_workflows() -> None:
    with WorkflowTest(sleeper("PT1M")) as t:
        t.publish("thing.started", "thing/1")
        t.publish("order.placed", "order/1")  # WAITER is not under test: no run
        assert [r.workflow for r in t.runs()] == ["harness-sleeper"]
    with WorkflowTest(sleeper("PT1M")) as t:
        assert t.runs() == []
        with pytest.raises(LookupError):
            t.run("00000000-0000-0000-0000-000000000000")


def test_nothing_talks_to_redis(caplog: pytest.LogCaptureFixture) -> None:
    """Its Redis URL points at nothing: any enqueue, timer or resume signal
    that reached Redis would log its failure."""
    caplog.set_level(logging.WARNING)
    with WorkflowTest(WAITER, flaky(fail_until=2)) as t:
        t.publish("order.placed", "order/1")
        t.publish("thing.started", "thing/1")
        t.advance("PT3H")
        assert [r.status for r in t.runs()] == ["completed", "completed"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith(("webapp", "worker"))] == []


def test_the_fixture_starts_a_harness_and_closes_it_after_the_test(workflow_test: Any) -> None:
    t = workflow_test(sleeper("PT5S"))
    t.publish("thing.started", "thing/1")
    t.advance("PT5S")
    assert only(t).status == "completed"
    assert t.app.config["APP_CONFIG"].database_url.startswith("sqlite:///")


def test_inside_a_test_with_its_own_app_everything_is_put_back(
    app: Any, use_workflow: Any, clock: Any, work: Any
) -> None:
    """The surrounding app's database (PostgreSQL in a PG run), clock,
    workflows, wake-up listener and sinks are the same after the harness."""
    outer = use_workflow(sleeper("PT1M"))
    names = sorted(w.name for w in wf.registered())
    engine = db.get_engine()
    with WorkflowTest(WAITER) as t:
        assert [w.name for w in wf.registered()] == ["harness-waiter"]
        assert db.get_engine() is not engine and clock_mod.get_clock() is t.clock
    assert sorted(w.name for w in wf.registered()) == names and wf.registry.get(outer.name) is outer
    assert db.get_engine() is engine and clock_mod.get_clock() is clock
    assert jobs_queue.set_sink(None) is None
    assert mail.set_sink(None) is None
    assert webhook.set_transport(None) is None
    listener = wake_signal.listen(None)
    wake_signal.listen(listener)
    assert listener is signals.on_wake
    emit("thing.started", {})  # the outer database and worker still work
    work()
    assert [r.workflow_name for r in runs()] == ["harness-sleeper"]


def test_a_cron_tick_in_the_harness_obeys_overlap_and_the_scheduler_tick_catches_up() -> None:
    slow = wf.workflow(
        "harness-slow-cron",
        cron="0 * * * *",
        catchup="PT3H",
        steps=[wf.wait("long", "PT90M"), wf.ret(lambda ctx: ctx.trigger.payload["tick"][11:16])],
    )
    with WorkflowTest(slow) as t:  # Monday 09:00
        first = t.start_cron_tick()
        t.advance("PT1H")
        skipped = t.start_cron_tick()  # 10:00: the 09:00 run waits until 10:30
        assert first is not None and skipped is not None
        assert (t.run(first).status, t.run(skipped).status) == ("suspended", "skipped")
        t.advance("PT5H30M")  # 15:30, the scheduler down since 10:00
        ids = t.scheduler_tick()  # 12:00 .. 14:00 missed, 15:00 due
        assert len(ids) == 4 and None not in ids
        assert [t.run(i).status for i in ids] == ["suspended", "skipped", "skipped", "skipped"]
        t.advance("PT2H")
        assert t.run(ids[0]).returned == "12:00"
