"""Event batching benchmark: `python -m bench.batching`.

Same set-up as `bench.workflows` (real RQ workers and an rq-scheduler as
subprocesses, embedded Redis or BENCH_REDIS_URL, a temporary SQLite database
or BENCH_DATABASE_URL), then, in the same run, alternated (BENCH_ROUNDS
rounds each, medians):

- plain_events_per_s: trigger events per second, each starting a plain
  one-step run, from the first append to the last run completed;
- batched_events_per_s: the same events into `batch=collect(max=50,
  within="PT1S", key=...)` on 20 keys, to the last batch completed (every
  event counted once, in the run that holds it);
- batch_ratio: batched / plain (above 1: batching takes events faster than
  one run each).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import webapp.workflows as wf
from bench import workflows as base
from bench.common import services, write_result

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
EVENTS = int(os.environ.get("BENCH_BATCH_EVENTS", "2000"))

PLAIN = wf.workflow(
    "bench-unbatched",
    on="bench.unbatched",
    steps=[wf.ret(lambda ctx: 1)],
)
BATCHED = wf.workflow(
    "bench-batched",
    on="bench.batched",
    batch=wf.collect(max=50, within="PT1S", key=lambda event: str(event.payload["i"] % 20)),
    steps=[wf.ret(lambda ctx: len(ctx.trigger_batch))],
)
OURS = (PLAIN, BATCHED)


def register(app: Any) -> None:
    """The WORKFLOW_MODULES hook of every bench process."""
    base.register_all()
    for flow in OURS:
        wf.register(flow)


class BatchBench(base.Bench):
    def __init__(self, db_url: str, redis_url: str, instance: Path) -> None:
        super().__init__(db_url, redis_url, instance, modules="bench.batching")
        for flow in OURS:
            wf.register(flow)
        from webapp.eventstore import projections

        projections.ensure_cursors()

    def events_done(self, name: str) -> int:
        """Trigger events of `name` whose run completed (a batch: all of its)."""
        from sqlalchemy import select

        from webapp.core import db
        from webapp.workflows.store.tables import workflow_runs

        c = workflow_runs.c
        with db.reading() as conn:
            q = select(c.results).where(c.workflow_name == name, c.status == "completed")
            return sum(int((r or {}).get("return", 0)) for r in conn.execute(q).scalars())

    def rate(self, name: str, event_type: str) -> float:
        done = self.events_done(name)
        t0 = time.perf_counter()
        for start in range(0, EVENTS, 100):
            self.emit(event_type, [{"i": i} for i in range(start, min(EVENTS, start + 100))])
        self.until(lambda: self.events_done(name) >= done + EVENTS, timeout=600)
        return EVENTS / (time.perf_counter() - t0)


def main() -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-batch-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        bench = BatchBench(db_url, redis_url, tmp / "instance")
        bench.start()
        stack.callback(bench.stop)
        plain, batched = [], []
        for _ in range(ROUNDS):
            plain.append(bench.rate(PLAIN.name, "bench.unbatched"))
            batched.append(bench.rate(BATCHED.name, "bench.batched"))
        result = {
            "backend": "postgresql" if db_url.startswith("postgres") else "sqlite",
            "workers": base.WORKERS,
            "events_per_round": EVENTS,
            "plain_events_per_s": round(statistics.median(plain), 1),
            "batched_events_per_s": round(statistics.median(batched), 1),
            "batch_ratio": round(statistics.median(batched) / statistics.median(plain), 2),
        }
    write_result(base.ROOT / "bench" / "results" / "batching.json", result)
    for k, v in result.items():
        print(f"{k:<24} {v}")
    return result


if __name__ == "__main__":
    main()
