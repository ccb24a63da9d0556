"""Event batching (`batch=collect(max, within, key)`): one run for up to
`max` trigger events of a key, started when full or `within` after its first
event, with `ctx.trigger_batch` in log order; every event in exactly one
batch; shown by `flask workflows show` and the console. With the real RQ
worker, a frozen clock, on the suite's database (SQLite or PostgreSQL)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, pending, run_events, runs
from webapp.workflows import pausing
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import run_events as ev


def post(event):
    return event.payload["postId"]


def digest(max_: int = 3, within: str = "PT5M", **more) -> wf.Workflow:
    return wf.workflow(
        "comment-digest",
        on="comment.posted",
        batch=wf.collect(max=max_, within=within, key=post),
        steps=[wf.ret(lambda ctx: [e.payload["n"] for e in ctx.trigger_batch])],
        **more,
    )


def comment(n: int, post_id: str = "p1") -> object:
    return emit("comment.posted", {"n": n, "postId": post_id}, aggregate_id=f"c{n}")


def due(work) -> None:
    """What the timer and the minute sweep do once the clock has moved."""
    sweep.sweep("default")
    work()


def batches() -> list[tuple[str, list[int] | None]]:
    return sorted(
        ((r.status, r.results.get("return")) for r in runs("comment-digest")),
        key=lambda x: (x[0], x[1] or []),
    )


def test_a_full_batch_starts_at_once_with_its_events_in_log_order(use_workflow, work, clock):
    use_workflow(digest(max_=3))
    for n in range(7):
        comment(n)
    comment(99, "p2")
    work()
    assert batches() == [
        ("completed", [0, 1, 2]),
        ("completed", [3, 4, 5]),
        ("queued", None),
        ("queued", None),
    ]
    full = next(r for r in runs("comment-digest") if r.results.get("return") == [0, 1, 2])
    kinds = [e.type for e in run_events(full.run_id)]
    assert kinds[:4] == [ev.RUN_QUEUED, ev.RUN_BATCHED, ev.RUN_BATCHED, ev.RUN_STARTED]
    started = run_events(full.run_id)[3].payload
    assert (started["batchKey"], started["batchSize"]) == ("p1", 3)
    assert full.rate_key == "p1"


def test_a_batch_that_never_fills_starts_within_its_window_of_its_first_event(
    use_workflow, work, clock
):
    use_workflow(digest(max_=50, within="PT5M"))
    first = comment(0)
    clock.advance(timedelta(minutes=2))
    comment(1)
    work()
    (row,) = runs("comment-digest")
    assert row.status == "queued" and row.started_at == first.recorded_at + timedelta(minutes=5)
    assert [p.suspension_event_type for p in pending()] == [ev.START]
    clock.advance(timedelta(minutes=3) - timedelta(seconds=1))
    due(work)
    assert batches() == [("queued", None)]  # not before its window ends
    clock.advance(timedelta(seconds=1))
    due(work)
    assert batches() == [("completed", [0, 1])]
    comment(2)  # after the start: a new batch
    work()
    assert batches() == [("completed", [0, 1]), ("queued", None)]


def test_each_key_collects_its_own_batch_and_ctx_trigger_is_the_first_event(
    use_workflow, work, clock
):
    use_workflow(
        wf.workflow(
            "comment-digest",
            on="comment.posted",
            batch=wf.collect(max=2, within="PT1M", key=post),
            steps=[
                wf.ret(
                    lambda ctx: [
                        ctx.trigger.payload["n"],
                        [e.payload["n"] for e in ctx.trigger_batch],
                    ]
                )
            ],
        )
    )
    comment(1, "a")
    comment(2, "b")
    comment(3, "a")
    comment(4, "b")
    work()
    assert sorted(r.results["return"] for r in runs("comment-digest")) == [[1, [1, 3]], [2, [2, 4]]]


def test_a_batch_of_one_starts_at_once_and_a_plain_run_sees_its_trigger_as_its_batch(
    use_workflow, work
):
    use_workflow(digest(max_=1))
    use_workflow(
        wf.workflow(
            "plain",
            on="comment.posted",
            steps=[wf.ret(lambda ctx: [e.payload["n"] for e in ctx.trigger_batch])],
        )
    )
    comment(7)
    work()
    assert batches() == [("completed", [7])]
    assert [r.results["return"] for r in runs("plain")] == [[7]]


def test_a_key_function_that_raises_fails_that_trigger_and_loses_no_other(use_workflow, work):
    use_workflow(digest(max_=2))
    comment(1)
    emit("comment.posted", {"n": 2}, aggregate_id="c2")  # no postId: its key function raises
    comment(3)
    work()
    rows = runs("comment-digest")
    assert sorted(r.status for r in rows) == ["completed", "failed"]
    failed = next(r for r in rows if r.status == "failed")
    assert failed.error == "workflow step failed (ControlError)"
    assert next(r for r in rows if r.status == "completed").results["return"] == [1, 3]


def test_a_paused_workflow_keeps_collecting_and_starts_its_batches_on_resume(
    use_workflow, work, clock
):
    use_workflow(digest(max_=2))
    pausing.pause_workflow("comment-digest")
    for n in range(3):
        comment(n)
    work()
    assert batches() == [("queued", None), ("queued", None)]
    pausing.resume_workflow("comment-digest")
    work()
    due(work)
    assert batches()[0] == ("completed", [0, 1])
    clock.advance(timedelta(minutes=5))
    due(work)
    assert batches() == [("completed", [0, 1]), ("completed", [2])]


@pytest.mark.parametrize(
    ("controls", "message"),
    [
        (dict(batch=wf.collect(2), debounce=wf.quiet("PT1M")), "batch= and debounce="),
        (dict(batch=wf.collect(2), throttle=wf.rate(1)), "batch= and throttle="),
        (dict(batch=wf.collect(2), rate_limit=wf.rate(1)), "batch= and rate_limit="),
        (dict(batch=wf.collect(2), concurrency=wf.limit(1)), "batch= and concurrency="),
        (dict(batch=wf.collect(2), key=lambda e: e.id), "batch= and key="),
        (dict(batch=wf.collect(2), singleton=wf.one()), "batch= and singleton="),
        (dict(batch=3), "batch= takes collect"),
    ],
)
def test_contradictory_combinations_are_refused_naming_the_fields(controls, message):
    with pytest.raises(wf.DefinitionError, match=re.escape(message)):
        wf.workflow("x", on="a.b", steps=[wf.ret(1)], **controls)


def test_a_batch_on_a_cron_or_child_workflow_is_refused():
    with pytest.raises(wf.DefinitionError, match="batch= and cron="):
        wf.workflow("x", cron="* * * * *", batch=wf.collect(2), steps=[wf.ret(1)])
    with pytest.raises(wf.DefinitionError, match="batch= and child="):
        wf.workflow("x", child=True, batch=wf.collect(2), steps=[wf.ret(1)])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (dict(max=0), "collect(max=...) must be an integer from 1 to 1000"),
        (dict(max=1001), "from 1 to 1000"),
        (dict(max=True), "from 1 to 1000"),
        (dict(max="5"), "from 1 to 1000"),
        (dict(max=5, within="five minutes"), "collect(within=...) takes an ISO-8601 duration"),
        (dict(max=5, within="PT0S"), "collect(within=...) must be above zero"),
        (dict(max=5, key="postId"), "collect(key=...) must be a function"),
    ],
)
def test_collect_refuses_bad_values_with_a_clear_message(args, message):
    with pytest.raises(wf.DefinitionError, match=re.escape(message)):
        wf.collect(**args)
