"""The resume loop: a step due now is pushed onto a Redis list while a loop is
alive (else it is an RQ resume-run job), each request is validated first
(rule 1), claimed with the same rules as the job (exactly once, whoever asks
and however often), and a slow continuation is handed to RQ under the claim's
lease. Run events commit without a projection dispatch unless an async
projection reads them."""

from __future__ import annotations

from rq import Queue

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, pending, run_events, runs, types
from webapp.jobs.queue import DISPATCH_PENDING_KEY
from webapp.workflows.dispatch import resume_loop as resumer
from webapp.workflows.dispatch import signals as timers
from webapp.workflows.engine import resume
from webapp.workflows.store import run_events as ev


def _alive(redis) -> None:
    redis.set(timers.ALIVE_KEY, "1", px=timers.LOOP_ALIVE_MS)


def _queued(redis) -> list[str]:
    return [j.func_name for j in Queue("default", connection=redis).jobs]


def _await_flow(use_workflow):
    return use_workflow(
        wf.workflow(
            "loop-await",
            on="loop.start",
            awaits={"ping": "loop.ping"},
            steps=[
                wf.wait_for_event(
                    "ping",
                    event="ping",
                    timeout="PT10M",
                    match=lambda ctx: wf.match.eq("i", ctx.trigger.payload["i"]),
                ),
                wf.ret(lambda ctx: ctx["ping"]["i"]),
            ],
        )
    )


def test_an_awaited_event_goes_to_the_live_loop_and_resumes_once(use_workflow, work, redis):
    _await_flow(use_workflow)
    emit("loop.start", {"i": 7})
    work()
    run = only_run("loop-await")
    assert run.status == "suspended"
    _alive(redis)
    redis.delete("rq:queue:default")
    emit("loop.ping", {"i": 7}, aggregate_id="p1")
    raw = redis.lrange(timers.RESUME_KEY, 0, -1)
    assert raw == [timers.member("default", run.run_id, 0).encode()]
    assert "worker.workflow_tasks.resume_run" not in _queued(redis)
    # the same request twice (a timer and a wake-up, or a give-back): one claim
    popped = resumer.pop(redis, block_s=0.1)
    assert resumer.handle(popped + popped) == {("default", run.run_id, 0): "resumed"}
    assert types(run.run_id) == [
        "run-started",
        "step.waiting-for-event",
        "step.resumed",
        "run-completed",
    ]
    assert only_run("loop-await").results["return"] == 7
    assert resumer.handle(popped) == {("default", run.run_id, 0): "already-resumed"}


def test_without_a_live_loop_a_due_step_is_an_rq_resume_run_job(use_workflow, work, redis, clock):
    _await_flow(use_workflow)
    emit("loop.start", {"i": 1})
    work()
    run = only_run("loop-await")
    emit("loop.ping", {"i": 1}, aggregate_id="p1")
    assert redis.llen(timers.RESUME_KEY) == 0
    assert "worker.workflow_tasks.resume_run" in _queued(redis)
    work()
    assert only_run("loop-await").status == "completed"
    assert types(run.run_id).count("step.resumed") == 1


def test_requests_are_taken_oldest_first(app, redis):
    for i in range(3):
        redis.set(timers.ALIVE_KEY, "1", px=timers.LOOP_ALIVE_MS)
        timers.request_resume("default", f"r{i}", 0)
    assert resumer.pop(redis, block_s=0.1) == [b"default|r0|0", b"default|r1|0", b"default|r2|0"]
    timers.request_resume("default", "r3", 0)
    resumer.give_back(redis, [b"default|r2|0"])
    assert resumer.pop(redis, block_s=0.1) == [b"default|r2|0", b"default|r3|0"]


def test_a_request_is_validated_first_and_a_bad_one_changes_nothing(
    use_workflow, work, redis, clock
):
    use_workflow(wf.workflow("loop-bad", on="loop.bad", steps=[wf.wait("nap", "PT1S"), wf.ret(1)]))
    emit("loop.bad", {})
    work()
    run = only_run("loop-bad")
    clock.advance(1)
    bad = [
        f"default|{run.run_id}|-1".encode(),
        b"default|not-a-uuid|0",
        f"nowhere|{run.run_id}|0".encode(),
        b"no separators",
    ]
    assert resumer.handle(bad) == {}
    assert types(run.run_id) == ["run-started", "step.waiting"]
    assert len(pending()) == 1


def test_a_request_not_due_yet_goes_back_to_the_timer(use_workflow, work, redis, clock):
    use_workflow(wf.workflow("loop-nap", on="loop.nap", steps=[wf.wait("nap", "PT30S"), wf.ret(1)]))
    emit("loop.nap", {})
    work()
    run = only_run("loop-nap")
    redis.delete(timers.TIMER_KEY)
    key = ("default", run.run_id, 0)
    assert resumer.handle([timers.member(*key)]) == {key: "not-due"}
    assert types(run.run_id) == ["run-started", "step.waiting"]
    assert redis.zscore(timers.TIMER_KEY, timers.member(*key)) is not None
    clock.advance(30)
    assert resumer.handle([timers.member(*key)]) == {key: "resumed"}
    assert only_run("loop-nap").status == "completed"


def test_due_rows_of_a_tenant_are_claimed_together(use_workflow, work, redis, clock):
    use_workflow(
        wf.workflow("loop-many", on="loop.many", steps=[wf.wait("nap", "PT1S"), wf.ret(1)])
    )
    for i in range(5):
        emit("loop.many", {}, aggregate_id=f"m{i}")
    work()
    clock.advance(1)
    ids = sorted(p.run_id for p in pending())
    assert len(ids) == 5
    out = resume.resume_many("default", [(rid, 0) for rid in ids] + [(ids[0], 3)])
    assert out == {**{(rid, 0): "resumed" for rid in ids}, (ids[0], 3): "already-resumed"}
    for rid in ids:
        assert types(rid) == ["run-started", "step.waiting", "step.resumed", "run-completed"]


def test_a_slow_continuation_is_handed_off_under_the_claims_lease(use_workflow, work, redis, clock):
    use_workflow(
        wf.workflow(
            "loop-slow",
            on="loop.slow",
            steps=[
                wf.wait("nap", "PT1S"),
                wf.compute("a", lambda c: 1),
                wf.compute("b", lambda c: c["a"] + 1),
                wf.ret(lambda c: c["b"]),
            ],
        )
    )
    emit("loop.slow", {})
    work()
    run = only_run("loop-slow")
    clock.advance(1)
    handed: list[tuple[str, str, str]] = []
    out = resume.resume_many("default", [(run.run_id, 0)], handoff=lambda *a: handed.append(a))
    assert out == {(run.run_id, 0): "resumed"}
    (tenant, run_id, token) = handed[0]
    leased = only_run("loop-slow")
    assert (leased.status, leased.lease_token) == ("running", token)
    assert resume.continue_leased(tenant, run_id, token) == "completed"
    assert only_run("loop-slow").results["return"] == 2
    assert resume.continue_leased(tenant, run_id, token) == "lost"  # the lease is gone


def test_run_events_queue_no_dispatch_unless_a_projection_reads_them(
    use_workflow, work, redis, clock
):
    use_workflow(
        wf.workflow("loop-quiet", on="loop.quiet", steps=[wf.wait("nap", "PT1S"), wf.ret(1)])
    )
    emit("loop.quiet", {})
    work()
    run = only_run("loop-quiet")
    clock.advance(1)
    redis.delete(DISPATCH_PENDING_KEY)
    assert resume.resume_run("default", run.run_id, 0) == "resumed"
    assert only_run("loop-quiet").status == "completed"
    assert not redis.exists(DISPATCH_PENDING_KEY)
    # a workflow started by another's completion: now its commit queues one
    use_workflow(
        wf.workflow(
            "loop-after",
            on=ev.RUN_COMPLETED,
            filter=lambda e: e.payload["workflowName"] == "loop-quiet",
            steps=[wf.ret(1)],
        )
    )
    emit("loop.quiet", {}, aggregate_id="q2")
    work()
    clock.advance(1)
    (second,) = [p.run_id for p in pending()]
    redis.delete(DISPATCH_PENDING_KEY)
    assert resume.resume_run("default", second, 0) == "resumed"
    assert redis.exists(DISPATCH_PENDING_KEY)
    work()
    assert ev.RUN_COMPLETED in {e.type for e in run_events(second)}
    assert len(runs("loop-after")) == 1
