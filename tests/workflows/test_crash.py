"""A real worker process SIGKILLed mid-run: after a restart every run reaches a
terminal state and no step committed before the kill runs again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.support.workflows import emit, runs
from tests.workflows.crash_workflow import CRASH
from webapp.core.config import ROOT
from webapp.jobs import enqueue


def _start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.workflows.crash_workflow import main; main()"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _until(pred, timeout: float = 60.0, every: float = 0.1, tick=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        if tick:
            tick()
        time.sleep(every)
    raise AssertionError("condition not reached in time")


def test_sigkill_mid_run_then_restart(use_workflow, database_url, redis_url, tmp_path, clock):
    use_workflow(CRASH)
    marks = tmp_path / "marks.txt"
    marks.touch()
    hang = Path(str(marks) + ".hang")
    hang.touch()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "crash-test-secret-key-0123456789",
        "LOG_LEVEL": "WARNING",
        "CRASH_MARKS": str(marks),
        "PYTHONPATH": str(ROOT),
        "CRASH_LEASE_S": "2",
    }
    for i in range(3):
        emit("crash.requested", {"i": i}, aggregate_id=f"c{i}")
    worker = _start_worker(env)
    try:
        _until(lambda: "b-start" in marks.read_text())
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        hang.unlink()
        before = Counter(marks.read_text().split())
        worker = _start_worker(env)

        def sweep() -> None:
            enqueue("worker.tasks.run_job", "resume-due-runs", "default", clock.now().isoformat())

        _until(
            lambda: (
                len(runs("crash-test")) == 3
                and all(r.status == "completed" for r in runs("crash-test"))
            ),
            timeout=90,
            every=1.0,
            tick=sweep,
        )
    finally:
        worker.kill()
        worker.wait()
    after = Counter(marks.read_text().split())
    for run in runs("crash-test"):
        rid = run.run_id
        assert after[f"{rid}:a"] == 1, "a step committed before the kill ran again"
        assert after[f"{rid}:b"] == 1 and after[f"{rid}:c"] == 1
        # only the step in flight at the kill may have started twice
        assert (
            after[f"{rid}:b-start"] == before[f"{rid}:b-start"] + (0 if before[f"{rid}:b"] else 1)
            or after[f"{rid}:b-start"] == 1
        )
    killed = [
        r.run_id
        for r in runs("crash-test")
        if before[f"{r.run_id}:b-start"] and not before[f"{r.run_id}:b"]
    ]
    assert len(killed) == 1
    assert after[f"{killed[0]}:b-start"] == 2


def test_sigkill_mid_step_continues_on_another_worker_without_a_sweep(
    use_workflow, database_url, redis_url, tmp_path
):
    """Heartbeated 10 s leases and the timer in every worker: once any worker
    is alive, the killed run continues by itself (no minute sweep involved),
    and steps committed before the kill do not run again."""
    use_workflow(CRASH)
    marks = tmp_path / "marks.txt"
    marks.touch()
    hang = Path(str(marks) + ".hang")
    hang.touch()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "crash-test-secret-key-0123456789",
        "LOG_LEVEL": "WARNING",
        "CRASH_MARKS": str(marks),
        "PYTHONPATH": str(ROOT),
    }
    emit("crash.requested", {"i": 0}, aggregate_id="k0")
    doomed = _start_worker(env)
    survivor = None
    try:
        _until(lambda: "b-start" in marks.read_text())
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
        hang.unlink()
        survivor = _start_worker(env)
        _until(
            lambda: [r.status for r in runs("crash-test")] == ["completed"],
            timeout=120,
            every=0.5,
        )
    finally:
        for p in (doomed, survivor):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    after = Counter(marks.read_text().split())
    (run,) = runs("crash-test")
    assert after[f"{run.run_id}:a"] == 1, "a step committed before the kill ran again"
    assert after[f"{run.run_id}:b-start"] == 2 and after[f"{run.run_id}:b"] == 1
    assert after[f"{run.run_id}:c"] == 1
