"""A worker SIGKILLed in the middle of a run, with real worker processes:
the other worker takes the run over as soon as the dead one's liveness key is
gone, long before its lease would expire, and every step committed before the
kill stays done once.

Both workers run with a lease far longer than this test may take, so the run
can only go on through the takeover (no lease expires, no sweep runs). No
step waits on time: the test polls for what it waits for, and step "b" hangs
only in the first process that reaches it (a file created exclusively), so
the takeover may come at any moment after the kill."""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from tests.procs import Proc, app_env, until, until_listening
from tests.support.workflows import emit, runs, types
from tests.workflows.takeover_workflow import AHEAD, TAKEOVER
from webapp.core import db
from webapp.eventstore.tables import events
from webapp.workflows.store import projection

LEASE_S = "600"


def _worker(env: dict[str, str], log: Any) -> Proc:
    code = "from tests.workflows.takeover_workflow import main; main()"
    return Proc([sys.executable, "-c", code], env, log)


def _marks(path: Any) -> list[tuple[str, str, int]]:
    """The marks written so far (a line still being written is left for later)."""
    out = []
    for line in path.read_text().splitlines(keepends=True):
        if line.endswith("\n"):
            run_id, what, pid = line.strip().split(":")
            out.append((run_id, what, int(pid)))
    return out


def _events(type_: str) -> int:
    with db.reading() as conn:
        q = select(func.count()).select_from(events).where(events.c.type == type_)
        return int(conn.execute(q).scalar_one())


@contextmanager
def _two_workers(
    database_url: str, redis_url: str, redis: Any, tmp_path: Any
) -> Iterator[tuple[list[Proc], Any]]:
    """Two worker processes with a lease longer than the test, both listening;
    yields them and the file their steps write their marks to."""
    marks = tmp_path / "marks.txt"
    marks.touch()
    env = app_env(
        database_url,
        redis_url,
        tmp_path / "instance",
        TAKEOVER_MARKS=str(marks),
        TAKEOVER_LEASE_S=LEASE_S,
    )
    workers = [_worker(env, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        until_listening(workers, redis)
        yield workers, marks
    finally:
        for w in workers:
            w.popen.kill()
            w.stop()


def _kill_at(workers: list[Proc], marks: Any, mark: str, what: str) -> tuple[str, int, Proc]:
    """Wait for the first `mark`; SIGKILL the worker that wrote it. Returns the
    run, the killed worker's pid and the survivor."""
    hung = until(lambda: [m for m in _marks(marks) if m[1] == mark], timeout=120, what=what)
    (run_id, _, doomed_pid), *_ = hung
    (doomed,) = [w for w in workers if w.popen.pid == doomed_pid]
    (survivor,) = [w for w in workers if w is not doomed]
    return run_id, doomed_pid, survivor


def _kill(workers: list[Proc], pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    next(w for w in workers if w.popen.pid == pid).popen.wait()


def test_a_sigkilled_workers_run_is_taken_over_by_the_other_worker(
    use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(TAKEOVER)
    with _two_workers(database_url, redis_url, redis, tmp_path) as (workers, marks):
        emit("takeover.requested", {}, aggregate_id="t1")
        run_id, doomed_pid, survivor = _kill_at(workers, marks, "b-start", "step b started")
        _kill(workers, doomed_pid)
        until(
            lambda: [r.status for r in runs(TAKEOVER.name)] == ["completed"],
            timeout=120,
            what="the run completed on the survivor",
        )
        assert survivor.alive()
        assert "lease holder gone: run taken over" in survivor.output()
    done = Counter((what, pid) for rid, what, pid in _marks(marks) if rid == run_id)
    other = survivor.popen.pid
    assert done == Counter(
        {
            ("a", doomed_pid): 1,
            ("b-start", doomed_pid): 1,
            ("b-start", other): 1,
            ("b", other): 1,
            ("c", other): 1,
        }
    ), "only the step in flight at the kill may run twice"
    assert _events("takeover.before") == 1 and _events("takeover.after") == 1
    assert types(run_id).count("run-completed") == 1
    (run,) = runs(TAKEOVER.name)
    assert run.results["return"] == "done"


def test_a_run_killed_while_running_ahead_of_its_lease_goes_on_on_the_other_worker(
    use_workflow, database_url, redis_url, redis, tmp_path, monkeypatch
):
    """A quick continuation (a pure step, then the end) runs before its lease
    is taken: the killed worker left no lease and no holder in the database.
    Its in-flight request goes back onto the resume list once its liveness
    key is gone (the start grace, as long as the lease, cannot be what
    continues the run)."""
    monkeypatch.setattr(projection, "START_GRACE", timedelta(seconds=int(LEASE_S)))
    use_workflow(AHEAD)
    with _two_workers(database_url, redis_url, redis, tmp_path) as (workers, marks):
        emit("ahead.requested", {}, aggregate_id="t2")
        run_id, doomed_pid, survivor = _kill_at(
            workers, marks, "pure-start", "the pure step started"
        )
        (run,) = runs(AHEAD.name)
        assert run.status == "running" and run.lease_token is None  # ahead of its lease
        _kill(workers, doomed_pid)
        until(
            lambda: [r.status for r in runs(AHEAD.name)] == ["completed"],
            timeout=120,
            what="the run completed on the survivor",
        )
        assert survivor.alive()
        assert "worker gone: its requests resumed" in survivor.output()
    done = Counter((what, pid) for rid, what, pid in _marks(marks) if rid == run_id)
    assert done == Counter({("pure-start", doomed_pid): 1, ("pure-start", survivor.popen.pid): 1})
    assert types(run_id).count("run-completed") == 1
    (run,) = runs(AHEAD.name)
    assert run.results["return"] == "done"
