"""Flow-control benchmark: `python -m bench.flow_control` (issue 18's measures).

Same set-up as `bench.workflows` (real RQ workers and an rq-scheduler as
subprocesses, embedded Redis or BENCH_REDIS_URL, a temporary SQLite database
or BENCH_DATABASE_URL), then, in the same run:

- limit_ratio: runs/s of the 3-step workflow with a concurrency limit declared
  but never reached, against the same workflow without one (alternated, 3
  rounds each, medians). Floor 0.85x.
- handoff_ms: a queued run's start once a slot frees: the settling run's
  run-completed to the queued run's first step event (it started and a worker
  ran it), p50/p95. Goal p95 at most 50 ms.
- drain_s: 10,000 queued runs on 100 keys with max=2 drained to completion,
  and the most runs of a key that held a slot at once, from the event log.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import webapp.workflows as wf
from bench import workflows as base
from bench.common import services, write_result

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
HANDOFFS = int(os.environ.get("BENCH_HANDOFFS", "40"))
DRAIN = int(os.environ.get("BENCH_FLOW_DRAIN", "10000"))

LIMITED = wf.workflow(
    "bench-limited",
    on="bench.limited",
    concurrency=wf.limit(max=100_000, key=lambda event: str(event.payload["i"] % 50)),
    steps=[
        wf.compute("x", lambda ctx: ctx.trigger.payload["i"] + 1),
        wf.wait("zero", timedelta(0)),
        wf.ret(lambda ctx: ctx["x"]),
    ],
)
HANDOFF = wf.workflow(
    "bench-handoff",
    on="bench.handoff",
    awaits={"go": "bench.handoff-go"},
    concurrency=wf.limit(max=1, key=lambda event: str(event.payload["k"])),
    steps=[
        wf.wait_for_event(
            "go",
            event="go",
            timeout="PT10M",
            match=lambda ctx: wf.match.eq("n", ctx.trigger.payload["n"]),
        ),
        wf.ret(1),
    ],
)
DRAINED = wf.workflow(
    "bench-drained",
    on="bench.drained",
    concurrency=wf.limit(max=2, key=lambda event: str(event.payload["i"] % 100)),
    steps=[wf.compute("x", lambda ctx: 1), wf.ret(1)],
)
OURS = (LIMITED, HANDOFF, DRAINED)


def register(app: Any) -> None:
    """The WORKFLOW_MODULES hook of every bench process."""
    base.register_all()
    for flow in OURS:
        wf.register(flow)


class FlowBench(base.Bench):
    def __init__(self, db_url: str, redis_url: str, instance: Path) -> None:
        super().__init__(db_url, redis_url, instance)
        self.env["WORKFLOW_MODULES"] = "bench.flow_control"
        for flow in OURS:
            wf.register(flow)
        from webapp.eventstore import projections

        projections.ensure_cursors()

    def rate(self, name: str, event_type: str, n: int) -> float:
        done = self.count(name, "completed")
        t0 = time.perf_counter()
        for start in range(0, n, 100):
            self.emit(event_type, [{"i": i} for i in range(start, min(n, start + 100))])
        self.until(lambda: self.count(name, "completed") >= done + n)
        return n / (time.perf_counter() - t0)

    def handoff_ms(self) -> list[float]:
        for k in range(HANDOFFS):
            self.emit("bench.handoff", [{"k": k, "n": 2 * k}, {"k": k, "n": 2 * k + 1}])
        self.until(lambda: self.count(HANDOFF.name, "queued") >= HANDOFFS)
        self.until(lambda: self.count(HANDOFF.name, "suspended") >= HANDOFFS)
        for k in range(HANDOFFS):
            self.emit("bench.handoff-go", [{"n": 2 * k}])
            time.sleep(0.05)
        self.until(
            lambda: (
                self.count(HANDOFF.name, "suspended") >= HANDOFFS
                and not self.count(HANDOFF.name, "queued")
            )
        )
        completed: dict[str, Any] = {}
        for e in self.events_of("workflow.run-completed"):
            if e.payload.get("workflowName") == HANDOFF.name:
                completed[e.aggregate_id] = e.recorded_at
        out: list[float] = []
        for e in self.events_of("workflow.step.waiting-for-event"):
            if e.payload.get("workflowName") != HANDOFF.name:
                continue
            stream = self._stream(e.aggregate_id)
            started = stream[0].payload
            if stream[0].type != "workflow.run-queued":
                continue
            first = [x for x in self.runs_of_key(started["concurrencyKey"]) if x in completed]
            if first:
                out.append((e.recorded_at - completed[first[0]]).total_seconds() * 1000)
        return out

    def runs_of_key(self, key: str) -> list[str]:
        from sqlalchemy import select

        from webapp.core import db
        from webapp.workflows.store.tables import workflow_runs

        c = workflow_runs.c
        with db.reading() as conn:
            q = select(c.run_id).where(c.workflow_name == HANDOFF.name, c.concurrency_key == key)
            return list(conn.execute(q).scalars())

    def drain(self) -> tuple[float, int]:
        t0 = time.perf_counter()
        for start in range(0, DRAIN, 500):
            self.emit("bench.drained", [{"i": i} for i in range(start, min(DRAIN, start + 500))])
        self.until(lambda: self.count(DRAINED.name, "completed") >= DRAIN, timeout=1800)
        took = time.perf_counter() - t0
        key_of: dict[str, str] = {}
        holding: Counter[str] = Counter()
        most = 0
        events = self.events_of("workflow.run-started") + self.events_of("workflow.run-completed")
        for e in sorted(events, key=lambda e: e.position):
            if e.payload.get("workflowName") != DRAINED.name:
                continue
            if e.type == "workflow.run-started":
                key_of[e.aggregate_id] = e.payload["concurrencyKey"]
                holding[key_of[e.aggregate_id]] += 1
                most = max(most, holding[key_of[e.aggregate_id]])
            elif e.aggregate_id in key_of:
                holding[key_of[e.aggregate_id]] -= 1
        return took, most


def main() -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-fc-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        bench = FlowBench(db_url, redis_url, tmp / "instance")
        bench.start()
        stack.callback(bench.stop)
        plain, limited = [], []
        for _ in range(ROUNDS):
            plain.append(bench.rate(base.THREE_STEP.name, "bench.go", base.RUNS))
            limited.append(bench.rate(LIMITED.name, "bench.limited", base.RUNS))
        handoff = bench.handoff_ms()
        took, most = bench.drain() if DRAIN else (float("nan"), 0)
        result = {
            "backend": "postgresql" if db_url.startswith("postgres") else "sqlite",
            "workers": base.WORKERS,
            "plain_runs_per_s": round(statistics.median(plain), 1),
            "limited_runs_per_s": round(statistics.median(limited), 1),
            "limit_ratio": round(statistics.median(limited) / statistics.median(plain), 3),
            "handoff_ms": {
                "p50": base.pct(handoff, 50),
                "p95": base.pct(handoff, 95),
                "n": len(handoff),
            },
            "drain_runs": DRAIN,
            "drain_s": round(took, 1),
            "drain_most_holding_per_key": most,
        }
    write_result(base.ROOT / "bench" / "results" / "flow_control.json", result)
    for k, v in result.items():
        print(f"{k:<28} {v}")
    return result


if __name__ == "__main__":
    main()
