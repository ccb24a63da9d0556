"""A worker SIGKILLed between any two steps of a timer's wake-up reaching a
run: after the timer's claim, after the resume loop took the request, after
its claim committed. Real worker processes, 20 runs each time: every run
completes on the other worker, through the dead worker's hand-off being
picked up within seconds (its liveness key lapses, `inflight.reap`), never
through a lease expiry (600 s here) nor the minute sweep (no scheduler runs).

How long the takeover took is printed (`-s`): from the kill to the last run's
completion."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.procs import Proc, app_env, until, until_listening
from tests.support.workflows import emit, runs, types
from tests.workflows.handoff_worker import HANDOFF, POINTS

RUNS = 20


def _worker(env: dict[str, str], log: Path) -> Proc:
    code = "from tests.workflows.handoff_worker import main; main()"
    return Proc([sys.executable, "-c", code], env, log)


def _kill(marks: Path) -> tuple[int, float]:
    (line,) = marks.read_text().splitlines()
    pid, at = line.split()
    return int(pid), float(at)


@pytest.mark.parametrize("point", sorted(POINTS))
def test_a_worker_killed_in_a_hand_off_leaves_no_run_to_the_sweep(
    point: str, use_workflow: Any, database_url: str, redis_url: str, redis: Any, tmp_path: Path
) -> None:
    use_workflow(HANDOFF)
    marks = tmp_path / "marks.txt"
    env = app_env(
        database_url,
        redis_url,
        tmp_path / "instance",
        HANDOFF_MARKS=str(marks),
        HANDOFF_KILL_AT=point,
        HANDOFF_LEASE_S="600",
    )
    workers = [_worker(env, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        until_listening(workers, redis)
        for i in range(RUNS):
            emit("handoff.go", {}, aggregate_id=f"h{i}")
        # Armed once every run waits for its timer (due 5 s after its start):
        # the kill then finds no other job of the worker in flight, which
        # only the sweep (no scheduler runs here) would pick up again.
        until(
            lambda: sorted(r.status for r in runs(HANDOFF.name)) == ["suspended"] * RUNS,
            timeout=60,
            what="every run waits for its timer",
        )
        (tmp_path / "marks.txt.armed").touch()
        until(marks.exists, timeout=120, what=f"a worker killed at {point}")
        doomed_pid, killed_at = _kill(marks)
        (doomed,) = [w for w in workers if w.popen.pid == doomed_pid]
        (survivor,) = [w for w in workers if w is not doomed]
        assert doomed.popen.wait(timeout=30) == -9
        until(
            lambda: sorted(r.status for r in runs(HANDOFF.name)) == ["completed"] * RUNS,
            timeout=50,
            what=f"every run completed after a kill at {point}",
        )
        took = time.time() - killed_at
        print(f"\n{point}: the last run completed {took:.2f} s after the kill")
        assert survivor.alive()
        for run in runs(HANDOFF.name):
            assert types(run.run_id).count("run-completed") == 1
            assert run.results["return"] == "done"
    finally:
        for w in workers:
            w.popen.kill()
            w.stop()
