"""A child's parent survives its worker being SIGKILLed while it is
suspended on the child (issue 18.7): after a restart the child finishes,
the parent gets its result, and no parent ever has two children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.support.workflows import emit, runs
from tests.workflows.child_crash_workflow import CHILD, PARENT
from tests.workflows.test_crash import _until
from webapp.core.config import ROOT
from webapp.workflows.store import children as child_store


def _start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.workflows.child_crash_workflow import main; main()"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_parent_suspended_on_its_child_survives_a_sigkill(
    use_workflow, database_url, redis_url, tmp_path
):
    use_workflow(CHILD)
    use_workflow(PARENT)
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
        emit("family.requested", {"n": i}, aggregate_id=f"f{i}")
    worker = _start_worker(env)
    survivor = None
    try:
        _until(lambda: ":start" in marks.read_text())  # a child runs, its parent suspended
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        hang.unlink()
        survivor = _start_worker(env)
        _until(
            lambda: sorted(r.status for r in runs("crash-parent")) == ["completed"] * 3,
            timeout=120,
            every=0.5,
        )
    finally:
        for p in (worker, survivor):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    parents = {r.run_id: r for r in runs("crash-parent")}
    children = runs("crash-child")
    assert len(children) == 3 and all(c.status == "completed" for c in children)
    assert Counter(c.parent_run_id for c in children) == Counter(dict.fromkeys(parents, 1))
    for c in children:
        p = parents[c.parent_run_id]
        assert c.run_id == child_store.child_run_id(p.run_id, 0, 1)
        assert p.results["return"] == c.results["return"] + 1
    marked = Counter(marks.read_text().split())
    # a step killed before its commit runs again, yet its child started once
    assert all(marked[f"{rid}:input"] in (1, 2) for rid in parents)
    # Only the child in flight at the kill ran its step again: twice, or three
    # times when the dead worker's in-flight request pushed back and its lease's
    # takeover both ran it ahead of their claims (one claim commits; a compute
    # step runs at least once). Every other child ran it once.
    again = [k for k, n in marked.items() if k.startswith("child:") and n > 1]
    assert len(again) == 1 and marked[again[0]] in (2, 3)
    assert all(n == 1 for k, n in marked.items() if k.startswith("child:") and k not in again)
