"""Throttle and debounce across real worker processes, in real time: the
timer fires the planned starts, 4 workers race for them, and the event log
shows no throttle window over its count; a burst of 50 edits starts one run."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.procs import until
from tests.support.workflows import emit, run_events, runs
from tests.workflows.rate_defs import DEBOUNCED, THROTTLED
from tests.workflows.test_rates import most_in_a_window
from webapp.core.config import ROOT
from webapp.workflows.store import run_events as ev

KEYS = 3
PER_KEY = 20


@pytest.fixture
def workers(database_url: str, redis_url: str, tmp_path: Any) -> Iterator[None]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "SECRET_KEY": "rates-test-secret-key-0123456789",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "from tests.workflows.rate_defs import main; main()"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(4)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_four_workers_never_start_more_than_five_of_a_key_in_two_seconds(
    app, use_workflow, workers
):
    use_workflow(THROTTLED)

    def send(k: int) -> None:
        with app.app_context():
            for n in range(PER_KEY):
                emit("export.requested", {"n": k * 100 + n, "customerId": f"c{k}"}, f"e{k}-{n}")

    senders = [threading.Thread(target=send, args=(k,)) for k in range(KEYS)]
    for s in senders:
        s.start()
    for s in senders:
        s.join()

    def done() -> bool:
        rows = runs("throttled")
        return len(rows) == KEYS * PER_KEY and all(r.status == "completed" for r in rows)

    until(done, timeout=120, every=0.5, what="every throttled run completed")
    starts: dict[str, list[Any]] = defaultdict(list)
    for r in runs("throttled"):
        started = [e for e in run_events(r.run_id) if e.type == ev.RUN_STARTED]
        assert len(started) == 1
        starts[started[0].payload["rateKey"]].append(started[0].recorded_at)
    assert sorted(starts) == [f"c{k}" for k in range(KEYS)]
    for key, times in starts.items():
        assert most_in_a_window(sorted(times), timedelta(seconds=2)) == 5, key
    assert sorted(r.results["n"] for r in runs("throttled")) == sorted(
        k * 100 + n for k in range(KEYS) for n in range(PER_KEY)
    )


def test_fifty_edits_within_two_seconds_start_one_run_with_the_last(use_workflow, workers):
    use_workflow(DEBOUNCED)
    for n in range(50):
        emit("document.edited", {"n": n, "customerId": "d1"}, "d1")
        time.sleep(0.03)  # 50 edits in about 1.5 s, as a person typing
    done = until(
        lambda: [r for r in runs("debounced") if r.status == "completed"],
        timeout=60,
        what="the debounced run completed",
    )
    time.sleep(4)  # a second run, were there one, would start within the quiet period
    rows = runs("debounced")
    assert len(rows) == 1 and done[0].results["return"] == 49
    kinds = [e.type for e in run_events(rows[0].run_id)]
    assert kinds.count(ev.RUN_DEBOUNCED) == 49 and kinds.count(ev.RUN_STARTED) == 1
