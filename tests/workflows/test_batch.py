"""The batch drain: one claim transaction for many due rows (rules 2-7 decided
per row from locked rows), quick continuations finished together, parallel
drains that never resume a row twice, and a bounded statement count."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from sqlalchemy import delete, event

import webapp.workflows as wf
from tests.support.workflows import pending, run_events, runs, types
from webapp.core import db
from webapp.eventstore import ANY, NewEvent, StreamId, append
from webapp.eventstore.tables import events as events_table
from webapp.workflows import operations as ops
from webapp.workflows.dispatch import drain as drains
from webapp.workflows.engine import resume
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import workflow_run_pending
from webapp.workflows.triggers import start as trigger


def _start(d: Any, count: int, tag: str) -> list[str]:
    """`count` runs of `d`, each with its own trigger event, advanced to their wait."""
    ids = []
    with db.transaction() as conn:
        for i in range(count):
            e = append(
                conn, StreamId("default", "thing", f"{tag}{i}"), [NewEvent("order.placed", {})], ANY
            )[0]
            run_id = trigger.start_run(conn, d, "default", e, None)
            assert run_id is not None
            ids.append(run_id)
    for run_id in ids:
        resume.advance("default", run_id)
    return ids


def test_one_batch_settled_changed_gone_and_resumed_rows(use_workflow, clock):
    quick = use_workflow(
        wf.workflow("bq", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)])
    )
    changed = use_workflow(
        wf.workflow("bc", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)])
    )
    slow = use_workflow(
        wf.workflow(
            "bs",
            on="order.placed",
            steps=[
                wf.wait("p", "PT1M"),
                wf.compute("a", lambda c: 1),
                wf.compute("b", lambda c: c["a"] + 1),
                wf.ret(lambda c: c["b"]),
            ],
        )
    )
    again = use_workflow(
        wf.workflow(
            "bw", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.wait("q", "PT1H"), wf.ret(1)]
        )
    )
    ok = _start(quick, 5, "q")
    gone = ok.pop()
    (was_changed,) = _start(changed, 1, "c")
    (slow_run,) = _start(slow, 1, "s")
    (waits_again,) = _start(again, 1, "w")
    # a settled run with a stale due row (as a lagging replica would show it)
    (done,) = _start(quick, 1, "d")
    (stale,) = [dict(p._mapping) for p in pending() if p.run_id == done]
    clock.advance(61)
    assert resume.resume_run("default", done, 0) == "resumed"
    assert types(done)[-1] == "run-completed"
    with db.transaction() as conn:
        conn.execute(workflow_run_pending.insert().values(**stale))
        trig = run_events(gone)[0].payload["triggerEventRef"]["eventId"]
        conn.execute(delete(events_table).where(events_table.c.id == trig))
    use_workflow(wf.workflow("bc", on="order.placed", steps=[wf.wait("p", "PT2M"), wf.ret(2)]))
    assert (
        changed.fingerprint
        != wf.workflow("bc", on="order.placed", steps=[wf.wait("p", "PT2M"), wf.ret(2)]).fingerprint
    )

    assert drains.drain_batch("default") == 9  # 4 + gone + changed + slow + again + stale

    for run_id in ok:
        assert types(run_id) == ["run-started", "step.waiting", "step.resumed", "run-completed"]
        assert run_events(run_id)[2].payload == {"stepIndex": 0}
    assert types(gone)[-2:] == ["step.resumed", "run-failed"]
    assert run_events(gone)[-1].payload["reason"] == ev.REASON_TRIGGER_UNAVAILABLE
    assert types(was_changed) == ["run-started", "step.waiting", "run-failed"]
    assert run_events(was_changed)[-1].payload == {
        "workflowName": "bc",
        "stepIndex": 0,
        "error": "workflow 'bc' definition changed since the run suspended",
        "reason": ev.REASON_DEFINITION_CHANGED,
    }
    assert types(slow_run)[-1] == "run-completed"
    assert types(waits_again) == [
        "run-started",
        "step.waiting",
        "step.resumed",
        "step.waiting",
    ]
    # the settled run: nothing appended, its stale row untouched
    assert types(done) == ["run-started", "step.waiting", "step.resumed", "run-completed"]
    by_run = {r.run_id: r for r in runs()}
    for run_id in ok:
        r = by_run[run_id]
        assert (r.status, r.step_index, r.version, r.lease_token) == ("completed", 2, 4, None)
        assert r.results == {"p": None, "return": 1}
    assert by_run[gone].status == "failed" and by_run[gone].version == 4
    assert by_run[was_changed].status == "failed" and by_run[was_changed].step_index == 0
    assert by_run[slow_run].results == {"p": None, "a": 1, "b": 2, "return": 2}
    r = by_run[waits_again]
    assert (r.status, r.step_index, r.version, r.lease_token) == ("suspended", 1, 4, None)
    left = {(p.run_id, p.step_index) for p in pending()}
    assert left == {(done, 0), (waits_again, 1)}
    (row,) = [p for p in pending() if p.run_id == waits_again]
    assert row.suspension_event_type == ev.STEP_WAITING
    assert row.definition_fingerprint == again.fingerprint
    assert row.wake_at == clock.now() + wf.parse_duration("PT1H")


def test_a_run_cancelled_while_its_batch_runs_is_not_completed(use_workflow, clock):
    cancel_now: list[str] = []

    def step(ctx):
        if ctx.run_id in cancel_now:
            ops.cancel(ctx.run_id)
        return 1

    d = use_workflow(
        wf.workflow(
            "bx", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.compute("c", step), wf.ret(2)]
        )
    )
    ids = _start(d, 3, "x")
    cancel_now.append(ids[1])
    clock.advance(61)
    assert drains.drain_batch("default") == 3
    assert types(ids[1]) == ["run-started", "step.waiting", "step.resumed", "run-cancelled"]
    for run_id in (ids[0], ids[2]):
        assert types(run_id)[-1] == "run-completed"


def test_parallel_drains_never_resume_a_row_twice(app, use_workflow, clock):
    d = use_workflow(wf.workflow("bp", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)]))
    ids = _start(d, 400, "p")
    clock.advance(61)
    barrier = threading.Barrier(4)
    errors: list[Exception] = []

    def drain() -> None:
        with app.app_context():
            barrier.wait()
            try:
                while drains.drain_batch("default", limit=25) == 25:
                    pass
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pending() == []
    with db.reading() as conn:
        from sqlalchemy import select

        rows = conn.execute(
            select(events_table.c.aggregate_id, events_table.c.type).where(
                events_table.c.aggregate_type == ev.AGGREGATE_TYPE
            )
        ).all()
    counts = Counter((r.aggregate_id, r.type) for r in rows)
    for run_id in ids:
        assert counts[(run_id, ev.STEP_RESUMED)] == 1
        assert counts[(run_id, ev.RUN_COMPLETED)] == 1
    assert {r.status for r in runs("bp")} == {"completed"}


def test_a_batch_costs_a_bounded_number_of_statements(use_workflow, clock):
    d = use_workflow(wf.workflow("bn", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)]))
    ids = _start(d, 60, "n")
    clock.advance(61)
    seen: list[str] = []

    def count(*_: Any) -> None:
        seen.append("x")

    engine_ = db.get_engine()
    event.listen(engine_, "before_cursor_execute", count)
    try:
        assert drains.drain_batch("default") == 60
    finally:
        event.remove(engine_, "before_cursor_execute", count)
    assert {r.status for r in runs("bn")} == {"completed"}
    assert len(ids) == 60
    # claim: due rows, runs rows, trigger events, append (3), delete, update;
    # finish: runs rows, append (3), delete, update; plus savepoints / BEGINs
    assert len(seen) <= 20, len(seen)  # 16 today; was about 25 per run
