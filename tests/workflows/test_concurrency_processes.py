"""The concurrency limit across worker processes: 4 real workers, 400
triggers on 10 keys with max=3. Every run completes, and the event log (in
position order, which is commit order) never shows more than 3 runs of a key
holding a slot."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.procs import until
from tests.support.workflows import emit, runs
from tests.workflows.limit_defs import RACE
from tests.workflows.test_concurrency import most_holding
from webapp.core.config import ROOT

TRIGGERS = 400
KEYS = 10


def _worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.workflows.limit_defs import main; main()"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_four_workers_never_exceed_the_limit_of_a_key(
    use_workflow, database_url, redis_url, tmp_path
):
    use_workflow(RACE)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "limit-test-secret-key-0123456789",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
    }
    workers = [_worker(env) for _ in range(4)]
    try:
        for n in range(TRIGGERS):
            emit("race.requested", {"n": n, "customerId": f"c{n % KEYS}"}, f"r{n}")

        def done() -> bool:
            rows = runs("race")
            return len(rows) == TRIGGERS and all(r.status == "completed" for r in rows)

        until(done, timeout=240, every=0.5, what="all 400 runs completed")
    finally:
        for w in workers:
            w.kill()
            w.wait()
    most = most_holding("race")
    assert set(most) == {f"c{k}" for k in range(KEYS)}
    assert max(most.values()) <= 3, most
    assert max(most.values()) == 3, most  # the limit was reached: the test raced
    assert sorted(r.results["more"] for r in runs("race")) == list(range(TRIGGERS))
