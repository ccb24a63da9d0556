"""The run lifecycle: events with exact payloads, the pending
set, triggers, waits, wait-for-event, retry, failures, idempotency."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import delete, select

import webapp.workflows as wf
from tests.support.workflows import emit, only_run, pending, run_events, runs, types
from webapp.core import db
from webapp.eventstore import parked
from webapp.eventstore.tables import events as events_table
from webapp.eventstore.tables import projection_cursors
from webapp.mail.outbox.tables import mail_outbox
from webapp.workflows.dispatch import sweep
from webapp.workflows.engine import resume, suspensions
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RUN_NAMESPACE


def three_step(name="three", **kw):
    return wf.workflow(
        name,
        on="order.placed",
        steps=[
            wf.compute("double", lambda ctx: ctx.trigger.payload["n"] * 2),
            wf.wait("pause", "PT10M"),
            wf.ret(lambda ctx: {"double": ctx["double"], "attempt": ctx.attempt}),
        ],
        **kw,
    )


def sweep_after(clock, seconds):
    clock.advance(seconds)
    return sweep.sweep("default")


def test_run_starts_suspends_and_completes_with_exact_payloads(use_workflow, work, clock):
    d = use_workflow(three_step())
    trigger = emit("order.placed", {"n": 21})
    work()
    run = only_run("three")
    assert types(run.run_id) == ["run-started", "step.waiting"]
    started, waiting = run_events(run.run_id)
    assert started.aggregate_type == "workflow-run"
    assert started.payload == {
        "workflowName": "three",
        "triggerEventType": "order.placed",
        "triggerEventRef": {"eventId": trigger.id, "aggregateId": "a1", "version": trigger.version},
        "definitionFingerprint": d.fingerprint,
    }
    wake = clock.now() + timedelta(minutes=10)
    assert waiting.payload == {
        "stepIndex": 1,
        "wakeAt": wake.isoformat(),
        "workflowName": "three",
        "definitionFingerprint": d.fingerprint,
    }
    (p,) = pending()
    assert (p.step_index, p.suspension_event_type, p.wake_at, p.definition_fingerprint) == (
        1,
        "workflow.step.waiting",
        wake,
        d.fingerprint,
    )
    assert p.trigger_event_type is None and p.wait_event_type is None
    # not due yet: the sweep leaves it alone
    assert sweep_after(clock, 60)["resumed"] == 0
    assert types(run.run_id) == ["run-started", "step.waiting"]
    sweep_after(clock, 600)
    assert types(run.run_id) == ["run-started", "step.waiting", "step.resumed", "run-completed"]
    resumed, completed = run_events(run.run_id)[2:]
    assert resumed.payload == {"stepIndex": 1}
    assert completed.payload == {"workflowName": "three", "stepIndex": 3}
    assert pending() == []
    final = only_run("three")
    assert final.status == "completed"
    assert final.results["return"] == {"double": 42, "attempt": 1}


def test_trigger_projection_starts_from_now(app, use_workflow, work):
    emit("order.placed", {"n": 1})  # before the workflow is mounted
    use_workflow(three_step())
    work()
    assert runs("three") == []
    emit("order.placed", {"n": 2})
    work()
    assert len(runs("three")) == 1


def test_filter_and_keyed_run_id(use_workflow, work):
    use_workflow(
        three_step(
            filter=lambda e: e.payload["n"] > 0,
            key=lambda e: f"k{e.payload['n']}",
        )
    )
    emit("order.placed", {"n": 0})
    emit("order.placed", {"n": 5})
    work()
    run = only_run("three")
    assert run.run_id == str(uuid.uuid5(RUN_NAMESPACE, "three|k5"))
    assert run_events(run.run_id)[0].payload["idempotencyKey"] == "k5"


def test_sequential_duplicate_is_ignored_while_open_and_restarts_when_closed(
    use_workflow, work, clock
):
    use_workflow(three_step(key=lambda e: "same"))
    emit("order.placed", {"n": 1})
    work()
    emit("order.placed", {"n": 2})
    work()
    run = only_run("three")
    assert types(run.run_id) == ["run-started", "step.waiting"]  # second trigger started nothing
    sweep_after(clock, 700)
    assert only_run("three").status == "completed"
    emit("order.placed", {"n": 3})
    work()
    assert types(run.run_id)[-2:] == ["run-started", "step.waiting"]
    assert len(types(run.run_id)) == 6


def test_on_duplicate_new_run_starts_a_second_run(use_workflow, work):
    use_workflow(three_step(key=lambda e: "same", on_duplicate="new-run"))
    emit("order.placed", {"n": 1})
    emit("order.placed", {"n": 2})
    work()
    assert len(runs("three")) == 2


def test_step_error_is_recorded_generically(use_workflow, work, caplog):
    def boom(ctx):
        raise ValueError("secret@example.com is broken")

    use_workflow(wf.workflow("boom", on="order.placed", steps=[wf.compute("x", boom)]))
    emit("order.placed", {})
    work()
    run = only_run("boom")
    failed = run_events(run.run_id)[-1]
    assert failed.type == ev.RUN_FAILED
    assert failed.payload == {
        "workflowName": "boom",
        "stepIndex": 0,
        "error": "workflow step failed (ValueError)",
    }
    assert "secret@example.com" in caplog.text  # the log has it, the event does not


def test_trigger_filter_error_is_recorded_and_swallowed(use_workflow, work):
    def bad_filter(e):
        raise KeyError("nope")

    use_workflow(wf.workflow("badfilter", on="order.placed", filter=bad_filter, steps=[wf.ret(1)]))
    emit("order.placed", {})
    emit("order.placed", {})
    work()
    failed = runs("badfilter")
    assert [r.status for r in failed] == ["failed", "failed"]
    assert failed[0].error == "workflow step failed (KeyError)"
    with db.reading() as conn:
        rows = parked.list_parked(conn)
        cursor = conn.execute(
            projection_cursors.select().where(projection_cursors.c.name == "workflow-badfilter")
        ).first()
    assert rows == []
    assert cursor.attempts == 0  # no redelivery


def test_wait_for_event_wakes_on_a_matching_event_only(use_workflow, work, clock):
    use_workflow(
        wf.workflow(
            "verify",
            on="member.joined",
            awaits={"verified": "member.confirmed"},
            steps=[
                wf.wait_for_event(
                    "got",
                    event="verified",
                    timeout="P1D",
                    match=lambda ctx: wf.match.eq("userId", ctx.trigger.payload["userId"]),
                ),
                wf.ret(lambda ctx: ctx["got"]),
            ],
        )
    )
    emit("member.joined", {"userId": "u1"})
    work()
    run = only_run("verify")
    waiting = run_events(run.run_id)[-1]
    with db.reading() as conn:
        trigger_position = conn.execute(
            select(events_table.c.position).where(events_table.c.type == "member.joined")
        ).scalar_one()
    assert waiting.payload == {
        "stepIndex": 0,
        "eventType": "member.confirmed",
        "match": {
            "version": 1,
            "expr": {"kind": "atom", "path": ["userId"], "op": {"op": "eq", "value": "u1"}},
        },
        "timeoutAt": (clock.now() + timedelta(days=1)).isoformat(),
        "workflowName": "verify",
        "definitionFingerprint": run.fingerprint,
        "afterPosition": trigger_position,
    }
    (p,) = pending()
    assert p.wait_event_type == "member.confirmed" and p.match_expr == waiting.payload["match"]
    assert p.after_position == waiting.payload["afterPosition"] and p.lookback_due is None
    emit("member.confirmed", {"userId": "u2"}, aggregate_id="u2")
    work()
    assert types(run.run_id) == ["run-started", "step.waiting-for-event"]
    verified = emit("member.confirmed", {"userId": "u1", "email": "a@b.c"}, aggregate_id="u1")
    work()  # the wake-up enqueues resume-run at once: no clock move, no sweep
    assert types(run.run_id) == [
        "run-started",
        "step.waiting-for-event",
        "step.resumed",
        "run-completed",
    ]
    assert only_run("verify").results["return"] == {"userId": "u1", "email": "a@b.c"}
    assert verified.payload["userId"] == "u1"


def test_wait_for_event_timeout_gives_an_empty_result(use_workflow, work, clock):
    use_workflow(
        wf.workflow(
            "verify",
            on="member.joined",
            awaits={"verified": "member.confirmed"},
            steps=[
                wf.wait_for_event("got", event="verified", timeout=timedelta(hours=24)),
                wf.ret(lambda ctx: {"got": ctx["got"]}),
            ],
        )
    )
    emit("member.joined", {"userId": "u1"})
    work()
    sweep_after(clock, 24 * 3600 + 1)
    assert only_run("verify").results["return"] == {"got": None}


def test_event_before_wait_still_wakes_the_run(use_workflow, work, clock):
    """The awaited event lands after the run started but before its wait registers."""
    use_workflow(
        wf.workflow(
            "late",
            on="member.joined",
            awaits={"verified": "member.confirmed"},
            steps=[
                wf.compute(
                    "meanwhile",
                    lambda ctx: emit("member.confirmed", {"userId": "u1"}, aggregate_id="u1").id,
                ),
                wf.wait_for_event(
                    "got", event="verified", timeout="P1D", match=wf.match.eq("userId", "u1")
                ),
                wf.ret(lambda ctx: ctx["got"]),
            ],
        )
    )
    emit("member.joined", {"userId": "u1"})
    work()
    assert only_run("late").status == "completed"
    assert only_run("late").results["return"] == {"userId": "u1"}


def test_a_look_back_lost_with_its_process_is_done_by_the_sweep(
    use_workflow, work, clock, monkeypatch
):
    """The awaited event came during a timer, and the wake-up projection passed
    it. Then the wait committed, and its process died (or a backup was taken)
    before any look-back ran: the row says its look-back is owed, and the
    minute sweep does it. The look-backs are taken out here to leave the state
    such a death leaves; the sweep runs the real one."""
    use_workflow(
        wf.workflow(
            "late",
            on="member.joined",
            awaits={"verified": "member.confirmed"},
            steps=[
                wf.wait("cool-off", "PT1S"),
                wf.wait_for_event(
                    "got", event="verified", timeout="P1D", match=wf.match.eq("userId", "u1")
                ),
                wf.ret(lambda ctx: ctx["got"]),
            ],
        )
    )
    emit("member.joined", {"userId": "u1"})
    work()
    emit("member.confirmed", {"userId": "u1"}, aggregate_id="u1")
    work()  # the wake-up projection's net reads it: no row waits for it yet
    with monkeypatch.context() as m:
        m.setattr(suspensions.pending, "look_back", lambda *a, **k: False)
        m.setattr(suspensions.pending, "look_back_committed", lambda *a, **k: False)
        sweep_after(clock, 2)  # the timer: the run goes on to its wait
        work()
    (row,) = pending()
    assert row.lookback_due is True and row.trigger_event_ref is None
    assert only_run("late").status == "suspended"
    assert sweep_after(clock, 60)["looked_back"] == 1
    work()
    assert only_run("late").status == "completed"
    assert only_run("late").results["return"] == {"userId": "u1"}
    assert pending() == [] and sweep_after(clock, 60)["looked_back"] == 0


def test_corrupt_match_expression_does_not_block_other_rows(use_workflow, work):
    use_workflow(
        wf.workflow(
            "verify",
            on="member.joined",
            awaits={"verified": "member.confirmed"},
            steps=[
                wf.wait_for_event(
                    "got",
                    event="verified",
                    timeout="P1D",
                    match=lambda ctx: wf.match.eq("userId", ctx.trigger.payload["userId"]),
                ),
                wf.ret(1),
            ],
        )
    )
    emit("member.joined", {"userId": "u1"}, aggregate_id="u1")
    emit("member.joined", {"userId": "u2"}, aggregate_id="u2")
    work()
    rows = {p.match_expr["expr"]["op"]["value"]: p for p in pending()}
    from webapp.workflows.store.tables import workflow_run_pending

    with db.transaction() as conn:
        conn.execute(
            workflow_run_pending.update()
            .where(workflow_run_pending.c.run_id == rows["u1"].run_id)
            .values(match_expr={"version": 99, "expr": "garbage"})
        )
    emit("member.confirmed", {"userId": "u2"}, aggregate_id="u2")
    emit("member.confirmed", {"userId": "u1"}, aggregate_id="u1")
    work()
    status = {r.run_id: r.status for r in runs("verify")}
    assert status[rows["u2"].run_id] == "completed"
    assert status[rows["u1"].run_id] == "suspended"


def test_retry_backoff_then_success(use_workflow, work, clock):
    calls = []

    def flaky(ctx):
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("mail server down")
        return "ok"

    use_workflow(
        wf.workflow(
            "flaky",
            on="order.placed",
            steps=[
                wf.retry("try", times=3, backoff="exponential", do=[wf.compute("send", flaky)]),
                wf.ret(lambda c: c["send"]),
            ],
        )
    )
    emit("order.placed", {})
    work()
    run = only_run("flaky")
    sched = run_events(run.run_id)[-1]
    assert sched.payload == {
        "stepIndex": 0,
        "attempt": 2,
        "maxAttempts": 3,
        "wakeAt": (clock.now() + timedelta(seconds=10)).isoformat(),
        "workflowName": "flaky",
        "error": "workflow step failed (ConnectionError)",
    }
    (p,) = pending()
    assert p.retry_attempt == 2 and p.definition_fingerprint == run.fingerprint
    sweep_after(clock, 11)
    assert run_events(run.run_id)[-2].payload == {"stepIndex": 0, "retryAttempt": 2}
    second = run_events(run.run_id)[-1]
    assert second.payload["attempt"] == 3
    assert (
        second.payload["wakeAt"] == (clock.now() + timedelta(seconds=20)).isoformat()
    )  # 10 s x 2^(2-1)
    sweep_after(clock, 21)
    assert calls == [1, 2, 3]
    assert only_run("flaky").status == "completed"
    assert only_run("flaky").results["return"] == "ok"


def test_retry_linear_and_exhausted_is_a_visible_failure(use_workflow, work, clock):
    def always(ctx):
        raise ConnectionError("down")

    use_workflow(
        wf.workflow(
            "dead",
            on="order.placed",
            steps=[wf.retry("try", times=2, backoff="linear", do=[wf.compute("x", always)])],
        )
    )
    emit("order.placed", {})
    work()
    run = only_run("dead")
    assert (
        run_events(run.run_id)[-1].payload["wakeAt"]
        == (clock.now() + timedelta(seconds=10)).isoformat()
    )
    sweep_after(clock, 11)
    assert types(run.run_id) == ["run-started", "retry.scheduled", "step.resumed", "run-failed"]
    assert run_events(run.run_id)[-1].payload == {
        "workflowName": "dead",
        "stepIndex": 0,
        "error": "workflow step failed (ConnectionError)",
    }


def test_definition_changed_between_suspend_and_resume(use_workflow, work, clock):
    use_workflow(three_step())
    emit("order.placed", {"n": 1})
    work()
    run = only_run("three")
    # same name, different steps: a new deploy
    use_workflow(
        wf.workflow("three", on="order.placed", steps=[wf.wait("pause", "PT10M"), wf.ret(2)])
    )
    sweep_after(clock, 601)
    last = run_events(run.run_id)[-1]
    assert last.type == ev.RUN_FAILED
    assert last.payload["reason"] == "workflow_definition_changed"
    assert pending() == []


def test_unregistered_workflow_fails_with_definition_changed(use_workflow, work, clock):

    use_workflow(three_step())
    emit("order.placed", {"n": 1})
    work()
    wf.unregister("three")
    sweep_after(clock, 601)
    run = only_run("three")
    assert run.status == "failed" and run.reason == "workflow_definition_changed"


def test_trigger_event_gone_fails_the_resume(use_workflow, work, clock):
    use_workflow(three_step())
    trigger = emit("order.placed", {"n": 1})
    work()
    with db.transaction() as conn:
        conn.execute(delete(events_table).where(events_table.c.id == trigger.id))
    sweep_after(clock, 601)
    run = only_run("three")
    assert types(run.run_id)[-2:] == ["step.resumed", "run-failed"]
    assert run.reason == "trigger_event_unavailable"


def test_awaited_event_gone_fails_the_resume(use_workflow, work, clock):
    use_workflow(
        wf.workflow(
            "verify",
            on="member.joined",
            awaits={"v": "member.confirmed"},
            steps=[wf.wait_for_event("got", event="v", timeout="P1D"), wf.ret(1)],
        )
    )
    emit("member.joined", {})
    work()
    # the wake-up ran (row woken) but the resume is lost, then the event is erased
    verified = emit("member.confirmed", {}, aggregate_id="u9")
    from webapp.eventstore import projections as pr

    pr.run_all()
    with db.transaction() as conn:
        conn.execute(delete(events_table).where(events_table.c.id == verified.id))
    sweep_after(clock, 1)
    run = only_run("verify")
    assert run.reason == "awaited_event_unavailable"
    assert run_events(run.run_id)[-1].payload["reason"] == "awaited_event_unavailable"


def test_settled_check_comes_before_the_definition_lookup(use_workflow, work, clock):
    """A late duplicate resume of a finished run never appends run-failed."""
    from webapp.workflows.store.tables import workflow_run_pending

    use_workflow(three_step())
    emit("order.placed", {"n": 1})
    work()
    (p,) = pending()
    stale = dict(p._mapping)
    sweep_after(clock, 601)
    run = only_run("three")
    assert run.status == "completed"
    with db.transaction() as conn:  # a stale row, as a lagging replica would show it
        conn.execute(workflow_run_pending.insert().values(**stale))
    wf.unregister("three")
    assert resume.resume_run("default", run.run_id, 1) == "already-resumed"
    assert types(run.run_id)[-1] == "run-completed"


def test_resume_run_validates_its_input(app):
    import pytest

    with pytest.raises(ValueError, match="runId must be a UUID"):
        resume.resume_run("default", "not-a-uuid", 0)
    with pytest.raises(ValueError, match="stepIndex must be an integer"):
        resume.resume_run("default", str(uuid.uuid4()), -1)
    assert resume.resume_run("default", str(uuid.uuid4()), 0) == "already-resumed"


def test_branch_for_each_append_event_and_call(use_workflow, work):

    seen = []

    def handler(conn, ctx, payload):
        seen.append(payload)
        return {"handled": payload["x"]}

    wf.register_handler("test:write:note", handler)
    use_workflow(
        wf.workflow(
            "combo",
            on="order.placed",
            steps=[
                wf.for_each(
                    "each",
                    over=lambda c: c.trigger.payload["items"],
                    as_="item",
                    do=[wf.compute("sq", lambda c: c["item"] ** 2)],
                ),
                wf.branch(
                    "big",
                    if_=lambda c: sum(c["each"]) > 10,
                    then=[wf.compute("verdict", lambda c: "big")],
                    else_=[wf.compute("verdict2", lambda c: "small")],
                ),
                wf.append_event(
                    "note",
                    "order",
                    lambda c: c.trigger.aggregate_id,
                    "order.noted",
                    lambda c: {"sum": sum(c["each"])},
                ),
                wf.call("handled", "test:write:note", lambda c: {"x": c["big"]}),
            ],
        )
    )
    emit("order.placed", {"items": [1, 2, 3]}, aggregate_id="o1")
    work()
    run = only_run("combo")
    assert run.status == "completed"
    assert run.results["each"] == [1, 4, 9]
    assert run.results["big"] == "big"
    assert run.results["handled"] == {"handled": "big"}
    assert seen == [{"x": "big"}]
    from webapp.eventstore import StreamId, read_stream

    with db.reading() as conn:
        (noted,) = read_stream(conn, StreamId("default", "order", "o1"))
    assert noted.type == "order.noted" and noted.payload == {"sum": 14}
    assert run.results["note"]["eventId"] == noted.id


def _mailer(name, then=()):
    return wf.workflow(
        name,
        on="order.placed",
        steps=[
            wf.send_mail("m", to=lambda c: c.trigger.payload["to"], subject="Hi", body="Body"),
            *then,
        ],
    )


def _outbox_rows():
    with db.reading() as conn:
        return conn.execute(select(mail_outbox)).all()


def test_send_mail_step_goes_through_the_outbox(use_workflow, work, smtp):
    use_workflow(_mailer("mailer"))
    emit("order.placed", {"to": "a@example.com"})
    work()
    assert only_run("mailer").status == "completed"
    assert only_run("mailer").results["m"] == {"sent": True}
    assert [e.rcpt_tos for e in smtp.inbox.messages] == [["a@example.com"]]
    assert "Subject: Hi" in smtp.inbox.bodies()[0]
    (row,) = _outbox_rows()
    assert row.kind == "workflow" and row.status == "sent" and row.recipient is None


def test_a_mail_of_a_step_that_rolls_back_is_never_sent(use_workflow, work, smtp, clock):
    """The mail is recorded in the transaction that commits the step: a retry
    attempt that fails after it rolls it back, so each attempt's mail exists
    only when that attempt commits, and a mail server outage is the outbox's
    to retry, not the step's."""
    attempts = []

    def flaky(ctx):
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise RuntimeError("not yet")
        return "ok"

    use_workflow(
        wf.workflow(
            "careful",
            on="order.placed",
            steps=[
                wf.retry(
                    "r",
                    times=3,
                    backoff="linear",
                    base_delay=10,
                    do=[
                        wf.send_mail(
                            "m", to=lambda c: c.trigger.payload["to"], subject="S", body="B"
                        ),
                        wf.compute("check", flaky),
                    ],
                )
            ],
        )
    )
    emit("order.placed", {"to": "a@example.com"})
    work()
    for _ in range(2):
        sweep_after(clock, 30)
    work()
    assert attempts == [1, 2, 3]
    assert only_run("careful").status == "completed"
    assert len(_outbox_rows()) == 1
    assert len(smtp.inbox.messages) == 1


def test_a_bad_address_or_subject_fails_the_step_and_records_nothing(
    use_workflow, work, smtp, caplog
):
    use_workflow(_mailer("bad"))
    for value in ("a@example.com\nBcc: x@evil.test", "a" * 320 + "@example.com", "nobody"):
        emit("order.placed", {"to": value})
    work()
    failed = runs("bad")
    assert [r.status for r in failed] == ["failed"] * 3
    for run in failed:
        assert run_events(run.run_id)[-1].payload["error"] == "workflow step failed (ValueError)"
    for reason in ("must be one line", "is longer than 320 characters", "is not an address"):
        assert f"send_mail: to {reason}" in caplog.text
    assert _outbox_rows() == [] and smtp.inbox.messages == []


def test_wait_until_an_absolute_instant(use_workflow, work, clock):
    at = clock.now() + timedelta(hours=2)
    use_workflow(wf.workflow("abs", on="order.placed", steps=[wf.wait("until", at), wf.ret(1)]))
    emit("order.placed", {})
    work()
    (p,) = pending()
    assert p.wake_at == at
    sweep_after(clock, 7201)
    assert only_run("abs").status == "completed"


def test_definition_errors():
    import pytest

    with pytest.raises(wf.DefinitionError, match="not a key of awaits"):
        wf.workflow("x", on="a", steps=[wf.wait_for_event("s", event="nope", timeout="PT1M")])
    with pytest.raises(wf.DefinitionError, match="top-level"):
        wf.workflow("x", on="a", steps=[wf.branch("b", True, [wf.wait("s", "PT1M")])])
    with pytest.raises(wf.DefinitionError, match="exactly one trigger"):
        wf.workflow("x", steps=[wf.ret(1)])
    with pytest.raises(ValueError, match="ISO-8601"):
        wf.parse_duration("10 minutes")
    assert wf.parse_duration("PT10M") == timedelta(minutes=10)
    assert wf.parse_duration("P1DT2H") == timedelta(days=1, hours=2)


def one(ctx):
    return 1


def make(fn):
    return wf.workflow("fp", on="a", steps=[wf.compute("c", fn)])


def test_fingerprint_covers_function_source():
    def two(ctx):
        return 2

    a, b, c = make(one), make(two), make(one)
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint == c.fingerprint
    assert len(a.fingerprint) == 64
    assert (
        make(one).fingerprint != wf.workflow("fp", on="b", steps=[wf.compute("c", one)]).fingerprint
    )
