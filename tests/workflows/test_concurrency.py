"""Concurrency limits per key: runs over the limit are Queued (run-queued,
with their key), start when a slot frees, by priority then oldest, and at no
position of the event log do more than `max` runs of a key hold a slot."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from tests.support.workflows import emit, run_events, runs, types
from tests.workflows.limit_defs import limited
from webapp.core import db
from webapp.eventstore.tables import events as events_table
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import run_events as ev


def request(n: int, customer: str = "acme", priority: int = 3) -> None:
    emit("sync.requested", {"n": n, "customerId": customer, "priority": priority}, f"s{n}")


def finish(n: int) -> None:
    emit("sync.done", {"n": n}, f"d{n}")


def status_of() -> dict[int, str]:
    out = {}
    for r in runs("sync"):
        out[run_events(r.run_id)[0].payload["triggerEventRef"]["aggregateId"]] = r.status
    return {int(k[1:]): v for k, v in out.items()}


def most_holding(name: str) -> dict[str, int]:
    """Replay the run events in log order: the most runs of each key that held
    a slot at once (run-started takes one, a settle gives it back)."""
    with db.reading() as conn:
        rows = conn.execute(
            select(events_table.c.aggregate_id, events_table.c.type, events_table.c.payload)
            .where(events_table.c.aggregate_type == ev.AGGREGATE_TYPE)
            .order_by(events_table.c.position)
        ).all()
    key_of: dict[str, str] = {}
    started = {r for r, t, _ in rows if t == ev.RUN_STARTED}
    holding: Counter[str] = Counter()
    most: Counter[str] = Counter()
    for run_id, type_, payload in rows:
        if payload.get("workflowName", name) != name:
            continue
        if type_ in (ev.RUN_QUEUED, ev.RUN_STARTED):
            key_of[run_id] = payload["concurrencyKey"]
        if type_ == ev.RUN_STARTED:
            holding[key_of[run_id]] += 1
            most[key_of[run_id]] = max(most[key_of[run_id]], holding[key_of[run_id]])
        elif type_ in ev.SETTLING and run_id in started:
            holding[key_of[run_id]] -= 1
    return dict(most)


def test_runs_over_the_limit_are_queued_with_their_key_and_start_as_slots_free(use_workflow, work):
    use_workflow(limited(max_=2))
    for n in range(5):
        request(n)
    request(9, customer="globex")
    work()
    assert status_of() == {
        0: "suspended",
        1: "suspended",
        2: "queued",
        3: "queued",
        4: "queued",
        9: "suspended",
    }
    queued = [r for r in runs("sync") if r.status == "queued"]
    first = run_events(queued[0].run_id)[0]
    assert first.type == ev.RUN_QUEUED and first.payload["concurrencyKey"] == "acme"
    assert first.payload["priority"] == 3
    finish(0)  # run 0 completes: run 2 (oldest queued) takes its slot in the same transaction
    work()
    assert status_of() == {
        0: "completed",
        1: "suspended",
        2: "suspended",
        3: "queued",
        4: "queued",
        9: "suspended",
    }
    for n in (1, 2, 3, 4):
        finish(n)
        work()
    finish(9)
    work()
    assert set(status_of().values()) == {"completed"}
    assert most_holding("sync") == {"acme": 2, "globex": 1}
    a_queued_run = queued[0].run_id
    assert types(a_queued_run)[:2] == ["run-queued", "run-started"]


def test_queued_runs_start_by_priority_then_oldest(use_workflow, work):
    use_workflow(limited(max_=1))
    request(0)
    request(1, priority=1)
    request(2, priority=5)
    request(3, priority=5)
    work()
    order = []
    for _ in range(4):
        running = [k for k, v in status_of().items() if v == "suspended"]
        order += running
        finish(running[0])
        work()
    assert order == [0, 2, 3, 1]


def test_without_a_key_the_limit_is_for_the_whole_workflow(use_workflow, work):
    use_workflow(limited(max_=1, keyed=False))
    request(0, customer="a")
    request(1, customer="b")
    work()
    assert status_of() == {0: "suspended", 1: "queued"}
    assert run_events(runs("sync")[0].run_id)[0].payload["concurrencyKey"] == ""


def test_a_cancelled_queued_run_never_starts_and_frees_nothing(use_workflow, work, runner):
    use_workflow(limited(max_=1))
    for n in range(3):
        request(n)
    work()
    queued = sorted(
        (r for r in runs("sync") if r.status == "queued"), key=lambda r: r.started_position
    )
    assert runner.invoke(args=["workflows", "cancel", queued[0].run_id]).exit_code == 0
    work()
    assert status_of() == {0: "suspended", 1: "cancelled", 2: "queued"}
    finish(0)
    work()
    assert status_of() == {0: "completed", 1: "cancelled", 2: "suspended"}


def test_the_sweep_starts_queued_runs_when_a_deploy_raises_the_limit(use_workflow, work):
    use_workflow(limited(max_=1))
    for n in range(3):
        request(n)
    work()
    use_workflow(limited(max_=3))
    assert sweep.sweep("default")["admitted"] == 2
    work()
    assert set(status_of().values()) == {"suspended"}


def test_a_key_function_that_fails_records_the_trigger_failure(use_workflow, work):
    use_workflow(limited(max_=1))
    emit("sync.requested", {"n": 1}, "s1")  # no customerId
    work()
    (run,) = runs("sync")
    assert run.status == "failed" and "KeyError" in run.error


def test_a_wrong_priority_records_the_trigger_failure(use_workflow, work):
    use_workflow(limited(max_=1))
    request(1, priority=9)
    work()
    (run,) = runs("sync")
    assert run.status == "failed" and "ControlError" in run.error


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3"])
def test_limit_refuses_a_wrong_max(bad):
    with pytest.raises(wf.DefinitionError, match=r"limit\(max=...\) must be an integer >= 1"):
        wf.limit(max=bad)


def test_limit_refuses_an_unknown_slot_kind():
    with pytest.raises(wf.DefinitionError, match="slot="):
        wf.limit(max=1, slot="sometimes")


def test_the_limit_is_not_part_of_the_fingerprint():
    assert limited(max_=1).fingerprint == limited(max_=5).fingerprint


def test_show_gives_a_queued_runs_key_and_place_and_a_waiting_runs_wait(use_workflow, work, runner):
    use_workflow(limited(max_=1))
    for n in range(3):
        request(n)
    work()
    by_n = {
        int(run_events(r.run_id)[0].payload["triggerEventRef"]["aggregateId"][1:]): r
        for r in runs("sync")
    }
    shown = runner.invoke(args=["workflows", "show", by_n[2].run_id]).output
    assert "status queued" in shown and "queued: key 'acme', position 2, priority 3" in shown
    js = json.loads(runner.invoke(args=["workflows", "show", by_n[1].run_id, "--json"]).output)
    assert js["queue"] == {
        "key": "acme",
        "position": 1,
        "priority": 3,
        "rateKey": None,
        "startAt": None,
    }
    assert js["version"] == 1 and js["events"][0]["type"] == ev.RUN_QUEUED
    waiting = json.loads(runner.invoke(args=["workflows", "show", by_n[0].run_id, "--json"]).output)
    assert waiting["queue"] is None
    assert [(p["stepIndex"], p["awaits"]) for p in waiting["pending"]] == [(0, "sync.done")]
    finish(0)
    work()
    done = json.loads(runner.invoke(args=["workflows", "show", by_n[0].run_id, "--json"]).output)
    assert done["status"] == "completed" and done["results"]["return"] == 0
