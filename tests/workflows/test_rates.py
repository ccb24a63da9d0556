"""Throttle (issue 18.2), rate limit (18.3) and debounce (18.4): excess
starts wait for their window, excess triggers are skipped, and a burst on
one key starts one run with its last trigger. Asserted from the run events
and the runs rows, with the real RQ worker and a frozen clock."""

from __future__ import annotations

from datetime import datetime, timedelta

import webapp.workflows as wf
from tests.support.metrics import delta, scrape
from tests.support.workflows import emit, only_run, pending, run_events, runs
from webapp.workflows import operations, pausing
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import run_events as ev

MINUTE = timedelta(minutes=1)


def user(event: object) -> str:
    return event.payload["userId"]  # type: ignore[attr-defined,no-any-return]


def report(**controls: object) -> wf.Workflow:
    return wf.workflow(
        "report",
        on="report.requested",
        steps=[wf.ret(lambda ctx: ctx.trigger.payload["n"])],
        **controls,  # type: ignore[arg-type]
    )


def request(n: int, user_id: str = "u1") -> object:
    return emit("report.requested", {"n": n, "userId": user_id}, aggregate_id=f"r{n}")


def due(work: object) -> None:
    """What the timer and the minute sweep do once the clock has moved."""
    sweep.sweep("default")
    work()  # type: ignore[operator]


def start_times(name: str = "report") -> list[datetime]:
    """When each run started, from its run-started event (recorded_at)."""
    out = []
    for r in runs(name):
        out += [e.recorded_at for e in run_events(r.run_id) if e.type == ev.RUN_STARTED]
    return sorted(out)


def most_in_a_window(times: list[datetime], per: timedelta) -> int:
    """The most starts in any window (t - per, t]."""
    return max((sum(1 for s in times if t - per < s <= t) for t in times), default=0)


def statuses(name: str = "report") -> list[str]:
    return sorted(r.status for r in runs(name))


# -- throttle -------------------------------------------------------------------


def test_throttle_starts_ten_a_minute_and_queues_the_rest_for_later_windows(
    use_workflow, work, clock
):
    use_workflow(report(throttle=wf.rate(10, per="PT1M", key=user)))
    t0 = clock.now()
    for n in range(25):
        request(n)
    work()
    assert statuses() == ["completed"] * 10 + ["queued"] * 15
    queued = [r for r in runs("report") if r.status == "queued"]
    first = run_events(queued[0].run_id)[0]
    assert first.type == ev.RUN_QUEUED and first.payload["rateKey"] == "u1"
    assert sorted(r.started_at for r in queued) == [t0 + MINUTE] * 10 + [t0 + 2 * MINUTE] * 5
    assert {p.suspension_event_type for p in pending()} == {ev.START}

    clock.advance(MINUTE - timedelta(seconds=1))
    due(work)
    assert statuses().count("completed") == 10  # not before its window
    clock.advance(timedelta(seconds=1))
    due(work)
    assert statuses() == ["completed"] * 20 + ["queued"] * 5
    clock.advance(MINUTE)
    due(work)
    assert statuses() == ["completed"] * 25
    times = start_times()
    assert len(times) == 25 and most_in_a_window(times, MINUTE) == 10
    assert [times.count(t0 + k * MINUTE) for k in range(3)] == [10, 10, 5]
    assert pending() == []
    started = run_events(runs("report")[0].run_id)
    assert all(e.payload.get("rateKey") == "u1" for e in started if e.type == ev.RUN_STARTED)


def test_throttle_keys_are_independent_and_late_starts_never_overfill_a_window(
    use_workflow, work, clock
):
    use_workflow(report(throttle=wf.rate(2, per="PT1M", key=user)))
    for n in range(7):
        request(n, "u1")
    request(100, "u2")
    work()
    by_user = {u: [r.status for r in runs("report") if r.rate_key == u] for u in ("u1", "u2")}
    assert sorted(by_user["u1"]) == ["completed"] * 2 + ["queued"] * 5
    assert by_user["u2"] == ["completed"]  # another key has its own window

    clock.advance(MINUTE * 5 / 2)  # no worker for 2.5 minutes: three windows came due at once
    due(work)
    assert statuses().count("queued") == 3  # only two more: the window is from now
    delayed = [e for r in runs("report") for e in run_events(r.run_id) if e.type == ev.RUN_DELAYED]
    assert delayed and all(e.payload["startAt"] for e in delayed)
    for _ in range(3):
        clock.advance(MINUTE)
        due(work)
    assert statuses() == ["completed"] * 8
    u1 = [t for r in runs("report") if r.rate_key == "u1" for t in start_times_of(r.run_id)]
    assert most_in_a_window(sorted(u1), MINUTE) == 2


def start_times_of(run_id: str) -> list[datetime]:
    return [e.recorded_at for e in run_events(run_id) if e.type == ev.RUN_STARTED]


def test_a_paused_throttled_workflow_keeps_its_window_when_it_resumes(use_workflow, work, clock):
    use_workflow(report(throttle=wf.rate(2, per="PT1M")))
    pausing.pause_workflow("report")
    for n in range(5):
        request(n)
    work()
    assert statuses() == ["queued"] * 5
    clock.advance(MINUTE * 10)
    pausing.resume_workflow("report")
    work()
    due(work)
    assert statuses() == ["completed"] * 2 + ["queued"] * 3
    for _ in range(2):
        clock.advance(MINUTE)
        due(work)
    assert statuses() == ["completed"] * 5
    assert most_in_a_window(start_times(), MINUTE) == 2


# -- rate limit -----------------------------------------------------------------


def test_rate_limit_skips_the_excess_and_the_operator_counts_the_skipped(
    use_workflow, work, clock, runner, client
):
    use_workflow(report(rate_limit=wf.rate(1, per="PT1H", key=user)))
    before = scrape(client)
    for n in range(5):
        request(n, "u1")
    request(10, "u2")
    request(11, "u2")
    work()
    rows = runs("report")
    assert sorted(r.status for r in rows) == ["completed"] * 2 + ["skipped"] * 5
    assert sorted(r.rate_key for r in rows if r.status == "completed") == ["u1", "u2"]
    skipped = [r for r in rows if r.status == "skipped"]
    assert all(r.reason == "rate_limit" for r in skipped)
    one = run_events(skipped[0].run_id)
    assert [e.type for e in one] == [ev.RUN_SKIPPED]
    assert one[0].payload["reason"] == "rate_limit"
    assert one[0].payload["trigger"]["type"] == "report.requested"
    assert set(one[0].payload) == {"workflowName", "trigger", "reason", "key", "version"}

    skipped_total = "webapp_workflow_runs_skipped_total"
    assert delta(scrape(client), before, skipped_total, workflow="report") == 5
    listed = runner.invoke(args=["workflows", "runs", "--status", "skipped"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.count(" skipped ") == 5

    clock.advance(timedelta(minutes=59))
    request(20, "u1")
    work()
    assert statuses().count("skipped") == 6  # still within the hour
    clock.advance(timedelta(minutes=2))
    request(21, "u1")
    work()
    assert statuses() == ["completed"] * 3 + ["skipped"] * 6


def test_rate_limit_with_a_debounce_on_the_same_key_skips_bursts_after_the_first(
    use_workflow, work, clock
):
    same = lambda e: e.payload["userId"]  # noqa: E731
    use_workflow(
        report(
            debounce=wf.quiet("PT10S", key=same),
            rate_limit=wf.rate(1, per="PT1H", key=lambda e: e.payload["userId"]),
        )
    )
    for n in range(3):
        request(n)
    work()
    assert statuses() == ["queued"]
    clock.advance(timedelta(seconds=10))
    due(work)
    assert [r.results.get("return") for r in runs("report")] == [2]
    for n in range(3, 6):
        request(n)
    work()
    assert statuses() == ["completed"] + ["skipped"] * 3


# -- debounce -------------------------------------------------------------------


def test_fifty_events_on_one_key_within_two_seconds_start_one_run_with_the_last(
    use_workflow, work, clock
):
    use_workflow(report(debounce=wf.quiet("PT30S", key=user, max_wait="PT5M")))
    sent = []
    for n in range(50):
        sent.append(request(n))
        work()
        clock.advance(timedelta(milliseconds=40))
    run = only_run("report")
    assert run.status == "queued"
    events = run_events(run.run_id)
    assert [e.type for e in events] == [ev.RUN_QUEUED] + [ev.RUN_DEBOUNCED] * 49
    assert run.trigger_event_ref["eventId"] == sent[-1].id
    assert [p.suspension_event_type for p in pending()] == [ev.START]
    assert pending()[0].wake_at == events[-1].recorded_at + timedelta(seconds=30)

    clock.advance(timedelta(seconds=29))
    due(work)
    assert only_run("report").status == "queued"  # the quiet period runs from the 50th
    clock.advance(timedelta(seconds=1))
    due(work)
    run = only_run("report")
    assert run.status == "completed" and run.results["return"] == 49
    started = [e for e in run_events(run.run_id) if e.type == ev.RUN_STARTED]
    assert len(started) == 1 and started[0].payload["triggerEventRef"]["eventId"] == sent[-1].id
    request(50)
    work()
    assert statuses() == ["completed", "queued"]  # after the start, a new debounce


def test_debounce_starts_at_max_wait_after_the_first_trigger_however_busy_the_key(
    use_workflow, work, clock
):
    use_workflow(report(debounce=wf.quiet("PT30S", key=user, max_wait="PT2M")))
    t0 = clock.now()
    for n in range(10):  # one every 20 s: never 30 s quiet
        request(n)
        work()
        clock.advance(timedelta(seconds=20))
        due(work)
    first, second = sorted(runs("report"), key=lambda r: r.started_position)
    assert first.status == "completed" and first.results["return"] == 5  # the last before 2:00
    assert start_times_of(first.run_id) == [t0 + timedelta(minutes=2)]
    assert second.status == "queued"
    assert run_events(first.run_id)[0].payload["startBy"] == (t0 + timedelta(minutes=2)).isoformat()


def test_debounce_keys_are_independent_and_a_cancel_ends_the_debouncing_run(
    use_workflow, work, clock
):
    use_workflow(report(debounce=wf.quiet("PT30S", key=user)))
    for n in range(3):
        request(n, "u1")
        request(10 + n, "u2")
    work()
    assert statuses() == ["queued", "queued"]
    u1 = next(r for r in runs("report") if r.rate_key == "u1")
    operations.cancel(u1.run_id)
    clock.advance(timedelta(seconds=30))
    due(work)
    done = {r.rate_key: (r.status, r.results.get("return")) for r in runs("report")}
    assert done == {"u1": ("cancelled", None), "u2": ("completed", 12)}
    assert pending() == []


def test_a_failing_rate_key_function_records_the_trigger_failure(use_workflow, work):
    use_workflow(report(throttle=wf.rate(1, per="PT1M", key=lambda e: e.payload["missing"])))
    request(1)
    work()
    run = only_run("report")
    assert run.status == "failed"
    assert run_events(run.run_id)[-1].payload["error"].startswith("workflow step failed")


def test_rate_limit_and_concurrency_together_skip_first_then_queue_for_a_slot(
    use_workflow, work, clock
):
    use_workflow(
        wf.workflow(
            "report",
            on="report.requested",
            rate_limit=wf.rate(3, per="PT1H", key=user),
            concurrency=wf.limit(max=1, key=user),
            steps=[wf.wait("render", "PT1M"), wf.ret(lambda ctx: ctx.trigger.payload["n"])],
        )
    )
    for n in range(5):
        request(n)
    work()
    assert statuses() == ["queued", "queued", "skipped", "skipped", "suspended"]
    for _ in range(3):
        clock.advance(MINUTE)
        due(work)
    assert statuses() == ["completed"] * 3 + ["skipped"] * 2
    assert sorted(r.results["return"] for r in runs("report") if r.status == "completed") == [
        0,
        1,
        2,
    ]


def test_a_paused_debounced_workflow_keeps_collecting_and_starts_on_resume(
    use_workflow, work, clock
):
    use_workflow(report(debounce=wf.quiet("PT30S", key=user)))
    request(0)
    work()
    pausing.pause_workflow("report")
    for n in range(1, 4):
        request(n)
        work()
    clock.advance(MINUTE)
    due(work)
    run = only_run("report")
    assert (run.status, run.paused_by) == ("queued", "workflow")  # due, but held by the pause
    pausing.resume_workflow("report")
    work()
    due(work)
    run = only_run("report")
    assert run.status == "completed" and run.results["return"] == 3
