"""Event-store write benchmark: `python -m bench.writes` (issue 23, point 1).

Needs BENCH_DATABASE_URL (a scratch PostgreSQL database: its public schema
is dropped) and uses BENCH_REDIS_URL or an embedded Redis. For 1, 4 and 8
processes, in the same run:

- publish_per_s: single-event transactions through `webapp.publish.publish`,
  each on a new stream (its after-commit dispatch request included);
- raw_per_s: raw single-row INSERTs with psycopg in autocommit mode into a
  table of the same shape, the hardware's baseline;
- ratio: publish / raw (issue floor 0.5x, goal 0.8x at 8 processes).

Each case runs its processes for BENCH_WRITE_SECONDS (default 5) after they
have all connected and warmed up.

First, CPU per call in one process (BENCH_WRITE_CPU_CALLS, default 3000, after
200 to warm up): the client's CPU time of one publish and of one raw INSERT,
and of the publish's dispatch request alone. With 8 CPU-bound processes on
a few cores, CPU per publish is what decides the throughput ratio.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.common import services, write_result

ROOT = Path(__file__).resolve().parent.parent
SECONDS = float(os.environ.get("BENCH_WRITE_SECONDS", "5"))
CPU_CALLS = int(os.environ.get("BENCH_WRITE_CPU_CALLS", "3000"))
PROCESSES = [int(n) for n in os.environ.get("BENCH_WRITE_PROCESSES", "1,4,8").split(",")]
RAW_TABLE = (
    "CREATE TABLE IF NOT EXISTS bench_raw (position bigserial PRIMARY KEY, id text NOT NULL,"
    " stream text NOT NULL, type text NOT NULL, payload json NOT NULL,"
    " recorded_at timestamptz NOT NULL DEFAULT now())"
)


def _app(db_url: str, redis_url: str, instance: str) -> Any:
    from webapp import create_app
    from webapp.core.config import Config

    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": instance,
        "SECRET_KEY": "bench-secret-key-0123456789abcdef",
        "LOG_LEVEL": "WARNING",
    }
    return create_app(Config.from_env(env))


def _publisher(
    db_url: str, redis_url: str, instance: str, ready: Any, start: Any, stop: Any, out: Any
) -> None:
    from webapp.publish import publish

    app = _app(db_url, redis_url, instance)
    with app.app_context():
        for _ in range(20):  # warm: pool, prepared statements
            publish("bench.written", "bench", str(uuid.uuid4()), {"n": 0})
        ready.release()
        start.wait()
        n = 0
        while not stop.is_set():
            publish("bench.written", "bench", str(uuid.uuid4()), {"n": n})
            n += 1
        out.put(n)


def _raw(
    db_url: str, redis_url: str, instance: str, ready: Any, start: Any, stop: Any, out: Any
) -> None:
    import psycopg

    conn = psycopg.connect(db_url.replace("postgresql+psycopg", "postgresql"), autocommit=True)
    sql = "INSERT INTO bench_raw (id, stream, type, payload) VALUES (%s, %s, %s, %s)"
    for _ in range(20):
        conn.execute(sql, (str(uuid.uuid4()), "bench", "bench.written", json.dumps({"n": 0})))
    ready.release()
    start.wait()
    n = 0
    while not stop.is_set():
        conn.execute(sql, (str(uuid.uuid4()), "bench", "bench.written", json.dumps({"n": n})))
        n += 1
    out.put(n)


def _cpu_per_call(call: Any) -> float:
    """Milliseconds of this process's CPU time per `call(n)`."""
    for n in range(200):
        call(n)
    began = time.process_time()
    for n in range(CPU_CALLS):
        call(n)
    return (time.process_time() - began) / CPU_CALLS * 1000


def _cpu(db_url: str, redis_url: str, instance: str, out: Any) -> None:
    import psycopg

    from webapp.jobs.queue import request_dispatch
    from webapp.publish import publish

    conn = psycopg.connect(db_url.replace("postgresql+psycopg", "postgresql"), autocommit=True)
    sql = "INSERT INTO bench_raw (id, stream, type, payload) VALUES (%s, %s, %s, %s)"
    figures = {
        "raw_cpu_ms": _cpu_per_call(
            lambda n: conn.execute(
                sql, (str(uuid.uuid4()), "bench", "bench.written", json.dumps({"n": n}))
            )
        )
    }
    with _app(db_url, redis_url, instance).app_context():
        figures["publish_cpu_ms"] = _cpu_per_call(
            lambda n: publish("bench.written", "bench", str(uuid.uuid4()), {"n": n})
        )
        figures["dispatch_request_cpu_ms"] = _cpu_per_call(lambda n: request_dispatch())
    out.put(figures)


def cpu_per_call(args: tuple[str, str, str]) -> dict[str, float]:
    """CPU per publish and per raw insert, measured in a fresh process."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_cpu, args=(*args, out))
    proc.start()
    figures: dict[str, float] = out.get(timeout=600)
    proc.join(30)
    return {k: round(v, 3) for k, v in figures.items()}


def measure(target: Any, processes: int, args: tuple[str, str, str]) -> float:
    ctx = mp.get_context("spawn")
    ready, start, stop, out = ctx.Semaphore(0), ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(*args, ready, start, stop, out)) for _ in range(processes)
    ]
    for p in procs:
        p.start()
    for _ in procs:  # every process imported, connected and warmed up
        if not ready.acquire(timeout=120):
            raise RuntimeError("a bench process did not start")
    time.sleep(0.5)
    start.set()
    began = time.perf_counter()
    time.sleep(SECONDS)
    stop.set()
    total = sum(out.get(timeout=60) for _ in procs)
    elapsed = time.perf_counter() - began
    for p in procs:
        p.join(30)
    return total / elapsed


def main() -> None:
    db_url = os.environ.get("BENCH_DATABASE_URL", "")
    if not db_url.startswith("postgresql"):
        raise SystemExit("bench.writes needs BENCH_DATABASE_URL=postgresql+psycopg://... (scratch)")
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        db_url, redis_url = services(stack, tmp, reset=True)
        from sqlalchemy import create_engine, text

        eng = create_engine(db_url)
        with eng.begin() as conn:
            conn.execute(text(RAW_TABLE))
        eng.dispose()
        instance = tmp / "instance"
        instance.mkdir()
        args = (db_url, redis_url, str(instance))
        cpu = cpu_per_call(args)
        print(
            f"CPU per call, one process: publish {cpu['publish_cpu_ms']:.3f} ms"
            f" (its dispatch request alone {cpu['dispatch_request_cpu_ms']:.3f} ms),"
            f" raw insert {cpu['raw_cpu_ms']:.3f} ms"
            f" ({cpu['publish_cpu_ms'] / cpu['raw_cpu_ms']:.1f}x)\n"
        )
        rows = []
        print(f"{'processes':>9} {'publish/s':>10} {'raw/s':>8} {'ratio':>6}")
        for n in PROCESSES:
            raw = measure(_raw, n, args)
            pub = measure(_publisher, n, args)
            rows.append(
                {
                    "processes": n,
                    "publish_per_s": round(pub),
                    "raw_per_s": round(raw),
                    "ratio": round(pub / raw, 2),
                }
            )
            print(f"{n:>9} {pub:>10.0f} {raw:>8.0f} {pub / raw:>6.2f}")
        write_result(
            ROOT / "bench" / "results" / "writes.json",
            {
                "backend": "postgresql",
                "seconds": SECONDS,
                "cases": rows,
                "cpu_per_call_ms": cpu,
                "floor_ratio_8": 0.5,
                "goal_ratio_8": 0.8,
            },
        )


if __name__ == "__main__":
    main()
