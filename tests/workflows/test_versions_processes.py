"""Versions side by side across a worker restart: 100 open runs of v1, then
a worker restarted with v1 finish-only and v2, 100 new triggers on v2; every
run finishes on the definition it started with."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.procs import until
from tests.support.workflows import emit, runs
from tests.workflows.versions_defs import v1, v2
from webapp.core.config import ROOT

N = 100


def _worker(env: dict[str, str], versions: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.workflows.versions_defs import main; main()"],
        cwd=ROOT,
        env={**env, "VERSIONS": versions},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _count(version: int, status: str) -> int:
    return sum(
        1 for r in runs("ver-order") if r.definition_version == version and r.status == status
    )


def test_two_versions_finish_on_their_own_definitions_across_a_worker_restart(
    use_workflow, database_url, redis_url, tmp_path
):
    use_workflow(v1())
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "versions-test-secret-key-0123456789",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
    }
    worker = _worker(env, "1")
    try:
        for i in range(N):
            emit("ver.ordered", {"n": i}, aggregate_id=f"o{i}")
        until(lambda: _count(1, "suspended") == N, timeout=120, what="100 v1 runs waiting")
        worker.kill()  # a deploy: the old worker goes, the new one has v2
        worker.wait()
        use_workflow(v1(start=False))
        use_workflow(v2())
        worker = _worker(env, "1-finish,2")
        for i in range(N, 2 * N):
            emit("ver.ordered", {"n": i}, aggregate_id=f"o{i}")
        until(lambda: _count(2, "suspended") == N, timeout=120, what="100 v2 runs waiting")
        emit("ver.shipped", {}, aggregate_id="ship")
        until(
            lambda: _count(1, "completed") + _count(2, "completed") == 2 * N,
            timeout=180,
            what="all runs completed",
        )
    finally:
        worker.kill()
        worker.wait()
    done = runs("ver-order")
    assert sorted(r.results["return"] for r in done if r.definition_version == 1) == sorted(
        f"v1:{i}" for i in range(N)
    )
    assert sorted(r.results["return"] for r in done if r.definition_version == 2) == sorted(
        f"v2:{i}:{i * 10}" for i in range(N, 2 * N)
    )
