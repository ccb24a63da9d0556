"""Signals, state and updates with a real worker process and real Redis:
what a caller sees, and what the run's history holds afterwards."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from tests.procs import Proc, app_env, until, until_listening
from tests.support.workflows import emit, only_run, run_events, runs
from tests.workflows.messages_defs import APPROVAL, CRASHING, STARTED
from webapp.core import db
from webapp.eventstore import projections
from webapp.workflows.store.tables import workflow_run_messages


def _worker(env: dict[str, str], log: Any) -> Proc:
    code = "from tests.workflows.messages_defs import main; main()"
    return Proc([sys.executable, "-c", code], env, log)


@contextmanager
def _workers(
    database_url: str, redis_url: str, redis: Any, tmp_path: Any, n: int = 1, **more: str
) -> Iterator[list[Proc]]:
    env = app_env(database_url, redis_url, tmp_path / "instance", **more)
    procs = [_worker(env, tmp_path / f"worker{i}.log") for i in range(n)]
    try:
        until_listening(procs, redis)
        yield procs
    finally:
        for p in procs:
            p.popen.kill()
            p.stop()


def _status(run_id: str) -> str:
    return str(next(r.status for r in runs() if r.run_id == run_id))


def _waits_at(run_id: str, step: int) -> bool:
    r = next(r for r in runs() if r.run_id == run_id)
    return r.status == "suspended" and r.step_index == step


def _types(run_id: str) -> list[str]:
    return [e.type.removeprefix("workflow.") for e in run_events(run_id)]


def _messages(run_id: str) -> list[Any]:
    with db.reading() as conn:
        q = select(workflow_run_messages).where(workflow_run_messages.c.run_id == run_id)
        return list(conn.execute(q.order_by(workflow_run_messages.c.seq)))


def test_signals_before_and_during_the_wait_once_per_key_and_never_to_a_settled_run(
    use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(APPROVAL)
    emit("messages.order-placed", {}, aggregate_id="o1")
    with _workers(database_url, redis_url, redis, tmp_path):
        run = until(lambda: runs(APPROVAL.name), what="the run started")[0]
        until(lambda: _waits_at(run.run_id, 2), what="the run waits for its first signal")
        assert wf.state(run.run_id) == {"stage": "waiting for approval"}
        # during the wait: it wakes the run; twice with one key: one signal
        first = wf.signal(run.run_id, "approve", {"by": "ann"}, key="k-1")
        assert wf.signal(run.run_id, "approve", {"by": "ann"}, key="k-1") == first
        until(lambda: _waits_at(run.run_id, 3), what="the first wait took the signal")
        # the second wait took nothing: the duplicate was never stored
        assert [m.status for m in _messages(run.run_id)] == ["taken"]
        wf.signal(run.run_id, "approve", {"by": "bob"})
        until(lambda: _waits_at(run.run_id, 5), what="the run waits for its update")
        assert wf.state(run.run_id) == {"stage": "approved"}
        # a signal before its wait is kept for it; one with no wait at all stays kept
        answer = wf.update(run.run_id, "amount", {"amount": 7}, timeout=60)
        assert answer.accepted and answer.value == {"approved": 7}
        until(lambda: _status(run.run_id) == "completed", what="the run completed")
    done = only_run(APPROVAL.name)
    assert done.results["return"] == {
        "signals": [{"by": "ann"}, {"by": "bob"}],
        "amount": {"approved": 7},
    }
    assert _types(run.run_id).count("signal-received") == 2
    with pytest.raises(wf.RunNotOpen):
        wf.signal(run.run_id, "approve", {"by": "late"})
    assert _types(run.run_id).count("signal-received") == 2  # refused: nothing written


def test_signals_sent_before_the_waits_are_taken_in_order(
    use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(APPROVAL)
    emit("messages.order-placed", {}, aggregate_id="o2")
    projections.run_all()  # the trigger starts the run; no worker takes it yet
    (run,) = runs(APPROVAL.name)
    # the worker is not running yet: both signals come before either wait
    wf.signal(run.run_id, "approve", {"n": 1})
    wf.signal(run.run_id, "approve", {"n": 2})
    with _workers(database_url, redis_url, redis, tmp_path):
        until(lambda: _waits_at(run.run_id, 5), what="both waits took their signal")
        assert wf.state(run.run_id) == {"stage": "approved"}
    r = only_run(APPROVAL.name)
    assert (r.results["first"], r.results["second"]) == ({"n": 1}, {"n": 2})
    waits = [e.payload for e in run_events(run.run_id) if e.type.endswith("waiting-for-message")]
    assert [w["kind"] for w in waits] == ["update"]  # neither signal wait suspended


def test_updates_accepted_rejected_timed_out_and_not_accepting(
    use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(APPROVAL)
    emit("messages.order-placed", {}, aggregate_id="o3")
    with _workers(database_url, redis_url, redis, tmp_path):
        run = until(lambda: runs(APPROVAL.name), what="the run started")[0]
        until(lambda: _waits_at(run.run_id, 2), what="the run waits for a signal")
        # not waiting for it: answered at once, nothing written
        before = _types(run.run_id)
        assert wf.update(run.run_id, "amount", {"amount": 1}, timeout=60).outcome == (
            "not-accepting"
        )
        assert _types(run.run_id) == before and _messages(run.run_id) == []
        wf.signal(run.run_id, "approve", {})
        wf.signal(run.run_id, "approve", {})
        until(lambda: _waits_at(run.run_id, 5), what="the run waits for its update")
        rejected = wf.update(run.run_id, "amount", {"amount": 500}, timeout=60)
        assert (rejected.outcome, rejected.reason) == ("rejected", "over the limit of 100")
        assert _waits_at(run.run_id, 5) or _status(run.run_id) == "running"
        # timed out: the caller stops waiting; the run still answers it, once
        slow = wf.update(run.run_id, "amount", {"amount": 3, "slow": 2}, timeout=0.2, key="u-1")
        assert slow.outcome == "timed-out"
        again = wf.update(run.run_id, "amount", {"amount": 3, "slow": 2}, timeout=60, key="u-1")
        assert again.accepted and again.value == {"approved": 3}
        assert again.update_id == slow.update_id
        until(lambda: _status(run.run_id) == "completed", what="the run completed")
    outcomes = [e.payload["outcome"] for e in run_events(run.run_id) if e.type.endswith("answered")]
    assert outcomes == ["rejected", "accepted"]
    assert only_run(APPROVAL.name).results["amount"] == {"approved": 3}


def test_update_with_start_racing_another_by_key_starts_one_run(
    app, use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(STARTED)
    answers: dict[int, Any] = {}
    go = threading.Barrier(2)

    def call(i: int) -> None:
        with app.app_context():
            go.wait()
            answers[i] = wf.update_with_start(
                STARTED.name, key="cart-1", name="amount", payload={"amount": i + 1}, timeout=60
            )

    with _workers(database_url, redis_url, redis, tmp_path):
        threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (run,) = runs(STARTED.name)
        until(lambda: _status(run.run_id) == "completed", what="the run completed")
    assert {rid for rid, _ in answers.values()} == {run.run_id}
    outcomes = sorted(a.outcome for _, a in answers.values())
    types = _types(run.run_id)
    if outcomes == ["accepted", "not-accepting"]:
        # The second came while the run was open: the first accepted ended the wait.
        assert types.count("run-started") == 1
    else:
        # The first run had completed before the second call locked its row: that
        # call started the key's next run. Never two open at once.
        assert outcomes == ["accepted", "accepted"], outcomes
        assert types.count("run-started") == 2 and types.count("run-completed") == 2
        second_start = len(types) - 1 - types[::-1].index("run-started")
        assert types.index("run-completed") < second_start, types


def test_update_with_start_after_the_keys_run_completed_starts_the_next_run(
    app, use_workflow, database_url, redis_url, redis, tmp_path
):
    """What the racing test above meets when its first run wins by far."""
    use_workflow(STARTED)
    with _workers(database_url, redis_url, redis, tmp_path):
        first = wf.update_with_start(
            STARTED.name, key="cart-2", name="amount", payload={"amount": 1}, timeout=60
        )
        until(lambda: _status(first[0]) == "completed", what="the first run completed")
        second = wf.update_with_start(
            STARTED.name, key="cart-2", name="amount", payload={"amount": 2}, timeout=60
        )
        until(lambda: _status(second[0]) == "completed", what="the next run completed")
    assert first[0] == second[0]  # the key's run id
    assert (first[1].outcome, second[1].outcome) == ("accepted", "accepted")
    types = _types(first[0])
    assert types.count("run-started") == 2 and types.count("run-completed") == 2
    assert types.index("run-completed") < len(types) - 1 - types[::-1].index("run-started")


def test_a_worker_killed_while_judging_an_update_answers_it_once(
    app, use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(CRASHING)
    marks = tmp_path / "marks.txt"
    marks.touch()
    emit("messages.crash", {}, aggregate_id="c1")
    out: dict[str, Any] = {}
    with _workers(
        database_url,
        redis_url,
        redis,
        tmp_path,
        n=2,
        MESSAGES_MARKS=str(marks),
        MESSAGES_LEASE_S="600",
    ) as workers:
        run = until(lambda: runs(CRASHING.name), what="the run started")[0]
        until(lambda: _waits_at(run.run_id, 0), what="the run waits for its update")

        def ask() -> None:
            with app.app_context():
                out["answer"] = wf.update(run.run_id, "note", {"n": 1}, timeout=120)

        caller = threading.Thread(target=ask)
        caller.start()
        judging = until(lambda: marks.read_text().splitlines(), what="a worker judges it")
        doomed = int(judging[0].split(":")[1])
        os.kill(doomed, signal.SIGKILL)
        caller.join()
        until(lambda: _status(run.run_id) == "completed", what="the run completed")
        survivor = next(w for w in workers if w.popen.pid != doomed)
        assert survivor.alive()
    assert out["answer"].accepted and out["answer"].value == {"seen": 1}
    answered = [e.payload for e in run_events(run.run_id) if e.type.endswith("update-answered")]
    assert [a["outcome"] for a in answered] == ["accepted"]
    pids = Counter(line.split(":")[1] for line in marks.read_text().splitlines())
    assert sorted(pids.values()) == [1, 1]  # judged by the killed worker, then by the other
