"""Races and faults: concurrent triggers, concurrent resumes, Redis flushed,
parallel drains, cancellation."""

from __future__ import annotations

import threading
from datetime import timedelta

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, pending, run_events, runs, types
from webapp.core import db
from webapp.workflows import operations as ops
from webapp.workflows.dispatch import drain as drains
from webapp.workflows.dispatch import sweep
from webapp.workflows.engine import resume
from webapp.workflows.triggers import start as trigger


def parallel(n, fn):
    barrier = threading.Barrier(n)
    out, errors = [], []

    def go(i):
        barrier.wait()
        try:
            out.append(fn(i))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return out


def test_fifty_concurrent_triggers_with_one_key_start_one_run(app, use_workflow):
    d = use_workflow(
        wf.workflow("once", on="order.placed", key=lambda e: "k", steps=[wf.wait("p", "PT1H")])
    )
    events = [emit("order.placed", {"i": i}, aggregate_id=f"o{i}") for i in range(50)]

    def start(i):
        with app.app_context(), db.transaction() as conn:
            return trigger.start_run(conn, d, "default", events[i], "k")

    started = [r for r in parallel(50, start) if r is not None]
    assert len(started) == 1
    assert types(started[0]) == ["run-started"]


def test_twenty_concurrent_resumes_claim_once(app, use_workflow, work, clock):
    use_workflow(wf.workflow("wake", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)]))
    emit("order.placed", {})
    work()
    run = only_run("wake")
    clock.advance(61)

    def res(_):
        with app.app_context():
            return resume.resume_run("default", run.run_id, 0)

    outcomes = parallel(20, res)
    assert outcomes.count("resumed") == 1
    assert outcomes.count("already-resumed") == 19
    t = types(run.run_id)
    assert t == ["run-started", "step.waiting", "step.resumed", "run-completed"]
    # a late duplicate after completion: still nothing appended
    assert resume.resume_run("default", run.run_id, 0) == "already-resumed"
    assert types(run.run_id)[-1] == "run-completed"


def test_redis_flushed_while_suspended_the_sweep_still_resumes(use_workflow, work, clock, redis):
    use_workflow(wf.workflow("timer", on="order.placed", steps=[wf.wait("p", "PT5M"), wf.ret(1)]))
    for i in range(3):
        emit("order.placed", {}, aggregate_id=f"o{i}")
    work()
    assert len(pending()) == 3
    redis.flushdb()  # the scheduled resume jobs are gone (the app has this one database)
    clock.advance(timedelta(minutes=6))
    from worker.tasks import run_job

    assert run_job("resume-due-runs", "default", clock.now().isoformat()) == "done"
    assert {r.status for r in runs("timer")} == {"completed"}


def test_started_run_lost_in_redis_is_advanced_by_the_sweep(use_workflow, clock, redis):
    use_workflow(
        wf.workflow("lost", on="order.placed", steps=[wf.compute("c", lambda c: 1), wf.ret(2)])
    )
    emit("order.placed", {})
    from webapp.eventstore import projections

    projections.run_all()
    redis.flushdb()  # FLUSHDB, not FLUSHALL: other test workers may share the server
    assert only_run("lost").status == "running"
    clock.advance(30)
    sweep.sweep("default")
    assert only_run("lost").status == "completed"


def test_backlog_drains_past_one_batch_and_in_parallel(app, use_workflow, clock):

    d = use_workflow(
        wf.workflow("bulk", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)])
    )
    total = drains.BATCH + 50  # past one batch
    with db.transaction() as conn:
        for i in range(total):
            e = emit_in(conn, i)
            trigger.start_run(conn, d, "default", e, None)
    for r in runs("bulk"):
        resume.advance("default", r.run_id)
    assert len(pending()) == total
    clock.advance(120)

    def drain(_):
        with app.app_context():
            return drains.drain("default", helpers=False)

    counts = parallel(2, drain)
    assert sum(counts) >= total
    statuses = [r.status for r in runs("bulk")]
    assert statuses.count("completed") == total
    for r in runs("bulk")[:20]:
        assert types(r.run_id).count("step.resumed") == 1


def emit_in(conn, i):
    from webapp.eventstore import ANY, NewEvent, StreamId, append

    return append(conn, StreamId("default", "thing", f"b{i}"), [NewEvent("order.placed", {})], ANY)[
        0
    ]


def test_cancelled_run_never_resumes(use_workflow, work, clock):
    use_workflow(wf.workflow("c", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)]))
    emit("order.placed", {})
    work()
    run = only_run("c")
    ops.cancel(run.run_id)
    assert pending() == []
    clock.advance(120)
    sweep.sweep("default")
    assert resume.resume_run("default", run.run_id, 0) == "already-resumed"
    assert types(run.run_id) == ["run-started", "step.waiting", "run-cancelled"]
    assert only_run("c").status == "cancelled"


def test_retry_of_a_failed_run_continues_at_the_failed_step(use_workflow, work):
    state = {"fail": True, "first": 0}

    def first(ctx):
        state["first"] += 1
        return "a"

    def second(ctx):
        if state["fail"]:
            raise RuntimeError("x")
        return ctx["first"] + "b"

    use_workflow(
        wf.workflow(
            "r", on="order.placed", steps=[wf.compute("first", first), wf.compute("second", second)]
        )
    )
    emit("order.placed", {})
    work()
    run = only_run("r")
    assert run.status == "failed" and run.step_index == 1
    state["fail"] = False
    ops.retry(run.run_id)
    work()
    assert only_run("r").status == "completed"
    assert only_run("r").results["second"] == "ab"
    assert state["first"] == 1  # the committed step did not run again
    assert types(run.run_id)[-2:] == ["run-retried", "run-completed"]
    assert run_events(run.run_id)[-2].payload == {"workflowName": "r", "stepIndex": 1}
