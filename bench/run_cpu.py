"""CPU per run: `python -m bench.run_cpu`.

One process does all the work of `bench.workflows`' 3-step workflow (compute
-> wait 0 s -> return) for BENCH_CPU_RUNS runs (default 2000) triggered 100
per transaction: the trigger projection, the starts, the leases, the steps and
the settles, run by the real RQ job code (`SimpleWorker`, burst) on a
temporary SQLite database (or BENCH_DATABASE_URL, a scratch PostgreSQL
database: its public schema is dropped) and an embedded Redis (or
BENCH_REDIS_URL, flushed). It prints the process's CPU time per run, which
the load of the rest of the machine barely moves (unlike runs/s), and the
wall time per run. BENCH_CPU_PROFILE=1 adds cProfile's top 40 functions by
cumulative time.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.common import services
from bench.transactions import _count, _emit, in_process
from bench.workflows import THREE_STEP

RUNS = int(os.environ.get("BENCH_CPU_RUNS", "2000"))
PROFILE = os.environ.get("BENCH_CPU_PROFILE") == "1"


def measure(db_url: str, redis_url: str, instance: Path) -> dict[str, Any]:
    with in_process(db_url, redis_url, instance, THREE_STEP) as burst:
        _emit("bench.go", [{"i": i} for i in range(50)])  # warm: pool, caches, prepared
        burst()
        for _ in range(RUNS // 100):
            _emit("bench.go", [{"i": i} for i in range(100)])
        profile = cProfile.Profile()
        cpu, wall = time.process_time(), time.perf_counter()
        if PROFILE:
            profile.enable()
        while _count(THREE_STEP.name, "completed") < 50 + RUNS // 100 * 100:
            burst()
        if PROFILE:
            profile.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if PROFILE:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    runs = RUNS // 100 * 100
    return {
        "cpu_ms_per_run": round(cpu * 1000 / runs, 3),
        "wall_ms_per_run": round(wall * 1000 / runs, 3),
    }


def main() -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cpu-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        out = measure(db_url, redis_url, tmp / "instance")
    backend = "postgresql" if db_url.startswith("postgres") else "sqlite"
    print(f"{backend}: {out['cpu_ms_per_run']} ms CPU per run, {out['wall_ms_per_run']} ms wall")
    return out


if __name__ == "__main__":
    main()
