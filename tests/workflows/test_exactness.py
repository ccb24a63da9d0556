"""Exact under faults: stable fingerprints, exactly-once writes inside retry,
infrastructure errors never fail a run, resume-run validates first, and the
look-back of a wait covers everything after the trigger."""

from __future__ import annotations

import functools
import json
import sqlite3
import subprocess
import sys
import uuid

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, run_events, types
from tests.workflows.fingerprint_defs import EVERY_KIND, SOURCELESS, Doubler, Pricing, scaled
from webapp.core import db
from webapp.core.config import ROOT
from webapp.eventstore import head_position
from webapp.eventstore.tables import events as events_table
from webapp.workflows.definition.fingerprint import describe
from webapp.workflows.dispatch import sweep
from webapp.workflows.engine import resume
from webapp.workflows.engine import transient as infra
from worker import workflow_tasks


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(infra, "FIRST_WAIT_S", 0.01)
    monkeypatch.setattr(infra, "MAX_WAIT_S", 0.05)


def _fingerprint_in_a_new_process() -> str:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tests.workflows.fingerprint_defs import EVERY_KIND; print(EVERY_KIND.fingerprint)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_fingerprint_is_the_same_in_separate_processes():
    first, second = _fingerprint_in_a_new_process(), _fingerprint_in_a_new_process()
    assert first == second == EVERY_KIND.fingerprint


@pytest.mark.parametrize(
    "fn",
    [
        functools.partial(scaled, factor=3),
        Pricing(5).price,
        Doubler(),
        SOURCELESS,
        lambda ctx: 1,
        len,
    ],
)
def test_no_callable_is_described_by_its_address(fn):
    described = json.dumps(describe(fn))
    assert "0x" not in described and " at " not in described


def test_fingerprint_tells_partials_apart():
    a = wf.workflow("p", on="x", steps=[wf.compute("c", functools.partial(scaled, factor=2))])
    b = wf.workflow("p", on="x", steps=[wf.compute("c", functools.partial(scaled, factor=3))])
    assert a.fingerprint != b.fingerprint


def _count(event_type: str) -> int:
    with db.reading() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(events_table)
                .where(events_table.c.type == event_type)
            ).scalar_one()
        )


def test_append_event_inside_retry_is_exactly_once_under_a_failure_after_it(
    use_workflow, work, clock
):
    attempts = []

    def fails_first(ctx):
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise RuntimeError("injected after the append")
        return "ok"

    use_workflow(
        wf.workflow(
            "once",
            on="once.go",
            steps=[
                wf.retry(
                    "try",
                    times=3,
                    base_delay=5,
                    do=[
                        wf.append_event("note", "note", lambda c: "n1", "note.added", {"x": 1}),
                        wf.compute("after", fails_first),
                    ],
                ),
                wf.ret(lambda ctx: ctx["after"]),
            ],
        )
    )
    emit("once.go", {})
    work()
    run = only_run("once")
    assert run.status == "suspended" and _count("note.added") == 0  # rolled back
    clock.advance(6)
    sweep.sweep("default")
    run = only_run("once")
    assert run.status == "completed" and run.results["return"] == "ok"
    assert attempts == [1, 2]
    assert _count("note.added") == 1


def test_append_event_and_call_inside_branch_and_for_each_commit_with_the_step(use_workflow, work):
    seen = []
    wf.register_handler("remember", lambda conn, ctx, payload: seen.append(payload) or 1)
    use_workflow(
        wf.workflow(
            "nested-writes",
            on="nested.go",
            steps=[
                wf.for_each(
                    "each",
                    over=[1, 2],
                    as_="item",
                    do=[
                        wf.branch(
                            "pick",
                            if_=lambda ctx: ctx["item"] == 2,
                            then=[wf.call("remember", "remember", lambda c: c["item"])],
                            else_=[wf.append_event("note", "note", "n", "note.added")],
                        )
                    ],
                ),
                wf.ret(1),
            ],
        )
    )
    emit("nested.go", {})
    work()
    assert only_run("nested-writes").status == "completed"
    assert seen == [2] and _count("note.added") == 1


def test_a_dropped_database_connection_inside_a_step_does_not_fail_the_run(
    use_workflow, work, backend
):
    calls = []

    def drops_once(conn, ctx, payload):
        calls.append(1)
        if len(calls) == 1:
            if backend == "postgresql":
                conn.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
            else:  # the driver's own error class, as a lost database file gives it
                raise OperationalError("INSERT", {}, sqlite3.OperationalError("disk I/O error"))
        return "done"

    wf.register_handler("drops-once", drops_once)
    use_workflow(
        wf.workflow(
            "infra",
            on="infra.go",
            steps=[
                wf.retry("once", times=1, do=[wf.call("c", "drops-once")]),
                wf.ret(lambda ctx: ctx["once"]),
            ],
        )
    )
    emit("infra.go", {})
    work()
    run = only_run("infra")
    assert run.status == "completed" and run.results["return"] == "done"
    assert len(calls) == 2
    assert "run-failed" not in types(run.run_id)
    assert "retry.scheduled" not in types(run.run_id)


def test_redis_unavailable_inside_a_step_is_retried_by_the_engine(use_workflow, work):
    calls = []

    def redis_blip(ctx):
        calls.append(1)
        if len(calls) == 1:
            raise RedisConnectionError("Connection refused")
        return 2

    use_workflow(
        wf.workflow("redis-blip", on="blip.go", steps=[wf.compute("c", redis_blip), wf.ret(1)])
    )
    emit("blip.go", {})
    work()
    run = only_run("redis-blip")
    assert run.status == "completed" and calls == [1, 1]


# Fixed ids of no run: the test ids name them, and pytest-xdist workers must collect the same ids.
BAD_ARGS = [
    ("default", "not-a-uuid", 0, "runId must be a UUID"),
    ("default", "0b6e3c1d-5f2a-4e8b-9c47-1a3d5e7f9b20", "1", "stepIndex must be an integer"),
    ("default", "7d2f4a6b-8c1e-4f3a-b5d9-2e4c6a8b0d13", True, "stepIndex must be an integer"),
    ("default", "c3a5e7f9-1b2d-4c6e-8a0f-3b5d7f9a1c24", -1, "stepIndex must be an integer"),
    ("no-such-tenant", "e9b1d3f5-7a2c-4e6b-9d8f-4c6e8a0b2d35", 0, "unknown tenant"),
]


@pytest.mark.parametrize(("tenant", "run_id", "step", "message"), BAD_ARGS)
def test_resume_run_validates_first_in_the_function_and_the_job(app, tenant, run_id, step, message):
    with db.reading() as conn:
        head = head_position(conn)
    with pytest.raises(ValueError, match=message):
        resume.resume_run(tenant, run_id, step)
    with pytest.raises(ValueError, match=message):
        workflow_tasks.resume_run(tenant, run_id, step)
    with db.reading() as conn:
        assert head_position(conn) == head  # nothing appended


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["not-a-uuid", "0"], "runId must be a UUID"),
        ([str(uuid.uuid4()), "x"], "stepIndex must be an integer"),
        ([str(uuid.uuid4()), "0", "--tenant", "nope"], "unknown tenant"),
    ],
)
def test_resume_run_validates_first_in_the_cli(app, args, message):
    result = app.test_cli_runner().invoke(args=["workflows", "resume", *args])
    assert result.exit_code != 0 and message in result.output


def test_resume_run_cli_resumes_a_due_run(app, use_workflow, work, clock):
    use_workflow(wf.workflow("cli-resume", on="cli.go", steps=[wf.wait("nap", "PT1M"), wf.ret(3)]))
    emit("cli.go", {})
    work()
    run = only_run("cli-resume")
    clock.advance(61)
    result = app.test_cli_runner().invoke(args=["workflows", "resume", run.run_id, "0"])
    assert result.exit_code == 0 and "resumed" in result.output
    assert only_run("cli-resume").status == "completed"


def test_awaited_event_between_trigger_and_run_start_is_found(use_workflow, work):
    use_workflow(
        wf.workflow(
            "early-bird",
            on="member.joined",
            awaits={"v": "member.confirmed"},
            steps=[
                wf.wait_for_event(
                    "got",
                    event="v",
                    timeout="P1D",
                    match=lambda ctx: wf.match.eq("u", ctx.trigger.payload["u"]),
                ),
                wf.ret(lambda ctx: ctx["got"]),
            ],
        )
    )
    emit("member.joined", {"u": "x"})
    emit("member.confirmed", {"u": "y"}, aggregate_id="other")
    emit("member.confirmed", {"u": "x"}, aggregate_id="u9")  # before run-started exists
    work()
    run = only_run("early-bird")
    started = run_events(run.run_id)[0]
    assert started.type == "workflow.run-started"
    assert run.status == "completed" and run.results["return"] == {"u": "x"}


def test_a_rolled_back_start_leaves_nothing_for_the_next_transaction(use_workflow, work):
    from tests.support.workflows import runs
    from webapp.workflows.triggers import start as trigger

    d = use_workflow(wf.workflow("leak", on="leak.go", steps=[wf.ret(1)]))
    e = emit("leak.elsewhere", {})
    with pytest.raises(RuntimeError), db.transaction() as conn:
        trigger.start_run(conn, d, "default", e, None)
        raise RuntimeError("rolled back")
    with db.transaction() as conn:
        run_id = trigger.start_run(conn, d, "default", e, None)
    work()
    assert [(r.run_id, r.status) for r in runs("leak")] == [(run_id, "completed")]
