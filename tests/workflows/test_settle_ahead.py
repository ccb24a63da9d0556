"""Settle ahead: a quick continuation (pure steps up to a return, a failure
or a wait) runs before its claim or lease and commits in the transaction that
takes the run; a continuation computed from a row that has moved on is
dropped, never committed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import webapp.workflows as wf
from tests.helpers import statements
from tests.support.workflows import emit, only_run, pending, run_events, types
from webapp.core import db
from webapp.workflows import operations as ops
from webapp.workflows import pausing
from webapp.workflows.engine import resume
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs
from webapp.workflows.triggers import start as trigger


@contextmanager
def write_transactions() -> Iterator[list[str]]:
    """The write transactions begun meanwhile (SQLite's reads begin DEFERRED)."""
    with statements() as seen:
        begun: list[str] = []
        yield begun
    begun.extend(
        s for s in (q.upper() for q in seen) if s.startswith("BEGIN") and "DEFERRED" not in s
    )


def _started(d: Any) -> str:
    e = emit("order.placed", {"n": 20})
    with db.transaction() as conn:
        run_id = trigger.start_run(conn, d, "default", e, None)
    assert run_id is not None
    return run_id


def _awaiting(use_workflow: Any, name: str, after: list[Any]) -> tuple[Any, str]:
    d = use_workflow(
        wf.workflow(
            name,
            on="order.placed",
            awaits={"paid": "order.paid"},
            steps=[wf.wait_for_event("got", event="paid", timeout="PT1H"), *after],
        )
    )
    run_id = _started(d)
    resume.advance("default", run_id)
    assert only_run(name).status == "suspended"
    emit("order.paid", {"amount": 5})
    (row,) = [p for p in pending() if p.run_id == run_id and p.step_index >= 0]
    return row, run_id


def test_a_resumed_quick_run_is_claimed_and_settled_in_one_transaction(use_workflow, clock):
    row, run_id = _awaiting(
        use_workflow,
        "sa-pay",
        [wf.compute("twice", lambda c: c["got"]["amount"] * 2), wf.ret(lambda c: c["twice"])],
    )
    with write_transactions() as begun:
        out = resume.resume_requests([("default", run_id, row.step_index)])
    assert out == {("default", run_id, row.step_index): "resumed"}
    assert len(begun) == 1
    assert types(run_id)[-2:] == ["step.resumed", "run-completed"]
    done = only_run("sa-pay")
    assert (done.status, done.results["return"]) == ("completed", 10)
    assert [p for p in pending() if p.run_id == run_id] == []


def test_a_just_started_quick_run_is_leased_and_settled_in_one_transaction(use_workflow, clock):
    d = use_workflow(
        wf.workflow(
            "sa-start",
            on="order.placed",
            steps=[
                wf.compute("x", lambda c: c.trigger.payload["n"] + 1),
                wf.wait("zero", "PT0S"),
                wf.ret(lambda c: c["x"]),
            ],
        )
    )
    run_id = _started(d)
    with write_transactions() as begun:
        assert resume.advance_many("default", [run_id]) == {run_id: "completed"}
    assert len(begun) == 1
    assert types(run_id) == [
        "run-started",
        "step.waiting",
        "step.resumed",
        "run-completed",
    ]
    assert only_run("sa-start").results["return"] == 21


def test_a_failing_pure_step_run_ahead_fails_the_run_with_its_lease(use_workflow, clock):
    def boom(_c: Any) -> int:
        raise ValueError("no")

    d = use_workflow(
        wf.workflow("sa-boom", on="order.placed", steps=[wf.compute("b", boom), wf.ret(1)])
    )
    run_id = _started(d)
    assert resume.advance_many("default", [run_id]) == {run_id: "failed"}
    assert types(run_id) == ["run-started", "run-failed"]
    assert only_run("sa-boom").status == "failed"


def test_a_continuation_computed_before_the_run_was_cancelled_is_dropped(use_workflow, clock):
    row, run_id = _awaiting(use_workflow, "sa-cancel", [wf.ret(lambda c: c["got"]["amount"])])
    ahead = resume.ahead_of_claims("default", [(run_id, row.step_index)])
    assert set(ahead) == {(run_id, row.step_index)}
    ops.cancel(run_id)
    with db.transaction() as conn:
        _, due, claimed = resume.claim_due(conn, "default", [(run_id, row.step_index)], ahead)
    assert (due, claimed) == ([], [])
    assert ev.RUN_COMPLETED not in [e.type for e in run_events(run_id)]
    assert only_run("sa-cancel").status == "cancelled"


def test_a_continuation_from_an_older_version_is_dropped_and_the_run_goes_on(use_workflow, clock):
    row, run_id = _awaiting(use_workflow, "sa-moved", [wf.ret(lambda c: c["got"]["amount"])])
    key = (run_id, row.step_index)
    ahead = resume.ahead_of_claims("default", [key])
    pausing.pause(run_id)  # the run's row moves on (two events), its wait stays
    pausing.unpause(run_id)
    with db.transaction() as conn:
        _, _, (claim,) = resume.claim_due(conn, "default", [key], ahead)
    assert (claim.result, claim.settled) == ("resumed", None)
    assert claim.state is not None  # the usual way: continued under the new lease
    assert resume.continue_leased("default", run_id, claim.state.token) == "completed"
    assert [e.type for e in run_events(run_id)].count(ev.RUN_COMPLETED) == 1


def test_a_continuation_is_committed_at_most_once(use_workflow, clock):
    row, run_id = _awaiting(use_workflow, "sa-once", [wf.ret(lambda c: c["got"]["amount"])])
    key = (run_id, row.step_index)
    ahead = resume.ahead_of_claims("default", [key])
    for expected in ("completed", None):  # the second claim finds the row gone
        with db.transaction() as conn:
            _, due, claimed = resume.claim_due(conn, "default", [key], ahead)
        assert [c.settled for c in claimed] == ([expected] if expected else [])
    assert [e.type for e in run_events(run_id)].count(ev.RUN_COMPLETED) == 1


def test_a_run_whose_next_step_has_an_effect_goes_the_usual_way(use_workflow, clock):
    d = use_workflow(
        wf.workflow(
            "sa-effect",
            on="order.placed",
            steps=[wf.append_event("note", "note", "n1", "order.noted", {}), wf.ret(1)],
        )
    )
    run_id = _started(d)
    assert resume.ahead_of_leases("default", [run_id]) == {}
    assert resume.advance("default", run_id) == "completed"
    assert only_run("sa-effect").status == "completed"


def test_the_read_ahead_is_one_statement_and_reads_what_the_claim_locks(use_workflow, clock):
    """settle-ahead reads each due pending row with its runs row in one
    statement (`runs.read_keys`); what it reads is what the claim then locks
    (`runs.lock_keys`), column for column, and only the keys asked for."""
    row, run_id = _awaiting(use_workflow, "sa-read", [wf.ret(lambda c: c["got"]["amount"])])
    keys = [(run_id, row.step_index), (run_id, row.step_index + 7)]  # the second: no such row
    with statements() as seen, db.reading() as conn:
        read = runs.read_keys(conn, "default", keys)
    assert len([s for s in seen if s.lstrip().upper().startswith("SELECT")]) == 1
    with db.transaction() as conn:
        locked = runs.lock_keys(conn, "default", keys)
    assert len(read) == len(locked) == 1
    (p_read, run_read), (p_locked, run_locked) = read[0], locked[0]
    assert p_read._asdict() == dict(p_locked._mapping)
    assert run_read._asdict() == dict(run_locked._mapping)
    assert (p_read.run_id, p_read.step_index, run_read.status) == (
        run_id,
        row.step_index,
        "suspended",
    )
    with db.reading() as conn:
        assert runs.read_keys(conn, "default", []) == []
        assert runs.read_keys(conn, "other-tenant", keys) == []
