"""`make run` (worker/dev.py): a child that exits unexpectedly is started again
with backoff instead of stopping everything; SIGTERM still stops every process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

from tests import procs
from worker import dev


def test_child_is_restarted_with_growing_backoff_reset_when_stable():
    starts: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        p = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        starts.append(p)
        return p

    child = dev.Child("crashy", start)
    child.start()
    starts[-1].wait()
    t0 = child.started_at
    child.watch(t0 + 0.1)  # noticed: restart scheduled after 1 s
    assert child.restart_at == t0 + 0.1 + dev.FIRST_BACKOFF_S and len(starts) == 1
    child.watch(t0 + 0.5)  # not yet
    assert len(starts) == 1
    child.watch(t0 + 1.2)  # due: started again
    assert len(starts) == 2
    starts[-1].wait()
    child.watch(child.started_at + 0.1)
    assert child.restart_at == child.started_at + 0.1 + 2 * dev.FIRST_BACKOFF_S  # doubled
    child.watch(child.restart_at)
    starts[-1].wait()
    child.watch(child.started_at + dev.STABLE_AFTER_S)  # it had run long enough: 1 s again
    assert child.restart_at == child.started_at + dev.STABLE_AFTER_S + dev.FIRST_BACKOFF_S


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_make_run_restarts_a_killed_worker_and_stops_cleanly(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        INSTANCE_PATH=str(tmp_path / "i"),  # embedded Redis on a short socket path
        DATABASE_URL=f"sqlite:///{tmp_path / 'dev.db'}",
        PORT=str(_free_port()),
        WEB_CONCURRENCY="1",
        SECRET_KEY="dev-supervisor-secret-0123456789",
        LOG_LEVEL="WARNING",
    )
    run = procs.Proc([sys.executable, "-m", "worker.dev"], env, tmp_path / "dev.log")
    try:
        procs.until(lambda: "Ready:" in run.output(), timeout=90, what="make run ready")
        pid_of = re.compile(r"worker\s+\| started \(pid (\d+)\)")
        first = int(procs.until(lambda: pid_of.findall(run.output()), what="worker pid")[0])
        os.kill(first, signal.SIGKILL)
        procs.until(
            lambda: "worker   | exited with -9; restarting" in run.output(), what="exit seen"
        )
        second = procs.until(
            lambda: [int(p) for p in pid_of.findall(run.output()) if int(p) != first],
            what="worker started again",
        )[0]
        assert run.alive()
        pids = [int(p) for p in re.findall(r"\| started \(pid (\d+)\)", run.output())]
        run.popen.send_signal(signal.SIGTERM)
        assert run.popen.wait(30) == 0
        for pid in [*pids, second]:
            procs.until(lambda pid=pid: not _running(pid), timeout=15, what=f"pid {pid} gone")
    finally:
        run.stop()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of an already-exited child counts as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
