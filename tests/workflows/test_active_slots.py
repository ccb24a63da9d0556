"""`limit(..., slot="active")` (issue 18.1): a waiting run gives its slot back,
and a run that resumes takes one again, waiting for it when none is free,
so at no position of the event log do more than `max` runs of a key run."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

import webapp.workflows as wf
from tests.support.workflows import emit, pending, runs
from webapp.core import db
from webapp.eventstore.tables import events as events_table
from webapp.workflows.engine import resume
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import tables

RUNNING_FROM = (ev.RUN_STARTED, ev.STEP_RESUMED, ev.RUN_RETRIED)
RUNNING_UNTIL = (*ev.SUSPENSIONS, *ev.SETTLING)


def fetcher(slot: str) -> wf.Workflow:
    return wf.workflow(
        "fetch",
        on="fetch.requested",
        awaits={"ready": "fetch.ready"},
        concurrency=wf.limit(max=1, key=lambda e: e.payload["customerId"], slot=slot),
        steps=[
            wf.wait_for_event(
                "ready",
                event="ready",
                match=lambda ctx: wf.match.eq("n", ctx.trigger.payload["n"]),
                timeout="P1D",
            ),
            wf.ret(lambda ctx: ctx["ready"]["n"]),
        ],
    )


def most_running() -> int:
    """Replay the run events in log order: the most runs of the workflow
    running (not waiting) at once."""
    with db.reading() as conn:
        found = conn.execute(
            select(events_table.c.aggregate_id, events_table.c.type)
            .where(events_table.c.aggregate_type == ev.AGGREGATE_TYPE)
            .order_by(events_table.c.position)
        ).all()
    ours = {r.run_id for r in runs("fetch")}
    running: set[str] = set()
    most = 0
    for run_id, type_ in found:
        if run_id not in ours:
            continue
        if type_ in RUNNING_FROM:
            running.add(run_id)
        elif type_ in RUNNING_UNTIL:
            running.discard(run_id)
        most = max(most, len(running))
    return most


def request(n: int) -> None:
    emit("fetch.requested", {"n": n, "customerId": "acme"}, f"r{n}")


def by_n() -> dict[int, object]:
    return {int(r.subject_id[1:]): r for r in runs("fetch")}


def test_waiting_runs_give_their_slot_back(use_workflow, work):
    use_workflow(fetcher("active"))
    for n in range(3):
        request(n)
    work()
    assert sorted(r.status for r in runs("fetch")) == ["suspended"] * 3  # held: 1 + 2 queued


def test_a_held_slot_limit_still_queues_behind_a_waiting_run(use_workflow, work):
    use_workflow(fetcher("held"))
    for n in range(3):
        request(n)
    work()
    assert sorted(r.status for r in runs("fetch")) == ["queued", "queued", "suspended"]


def test_a_resume_without_a_free_slot_waits_for_one(use_workflow, work):
    use_workflow(fetcher("active"))
    for n in range(3):
        request(n)
    work()
    for n in range(3):
        emit("fetch.ready", {"n": n}, f"x{n}")  # all three are due now
    first, second = by_n()[0], by_n()[1]
    done = resume.resume_many("default", [(first.run_id, 0), (second.run_id, 0)])
    # one slot: one of the two resumes, the other waits for it
    assert sorted(done.values()) == ["no-slot", "resumed"]
    work()  # the first completed and released the second's row; the third's resume comes
    assert [r.status for r in sorted(runs("fetch"), key=lambda r: r.subject_id)] == [
        "completed"
    ] * 3
    assert {by_n()[n].results["return"] for n in range(3)} == {0, 1, 2}
    assert pending() == []
    assert most_running() == 1


def test_a_held_row_is_not_due_until_a_slot_frees(use_workflow, work):
    use_workflow(fetcher("active"))
    for n in range(2):
        request(n)
    work()
    zero, one = by_n()[0], by_n()[1]
    emit("fetch.ready", {"n": 1}, "x1")
    # Run 0 holds the key's one slot (as while a worker runs its step: this
    # test cannot stop a worker mid-step, so it sets the row as that would).
    with db.transaction() as conn:
        conn.exec_driver_sql(
            "UPDATE workflow_runs SET status = 'running' WHERE run_id = ?"
            if db.is_sqlite(conn)
            else "UPDATE workflow_runs SET status = 'running' WHERE run_id = %s",
            (zero.run_id,),
        )
    done = resume.resume_many("default", [(one.run_id, 0)])
    assert done[(one.run_id, 0)] == "no-slot"
    rows_now = {(p.run_id, p.step_index): p.wake_at for p in pending()}
    assert rows_now[(one.run_id, 0)] == tables.SLOT_WAIT
    assert resume.resume_many("default", [(one.run_id, 0)])[(one.run_id, 0)] != "resumed"
    assert Counter(r.status for r in runs("fetch"))["completed"] == 0
