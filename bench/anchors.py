"""Side by side with DBOS: `make bench-anchors` (or `python -m bench.anchors`).

Runs, in one invocation and on the same PostgreSQL:

1. DBOS's side, `bench/anchors_dbos.py`, in DBOS's own venv (ANCHORS_DBOS_PYTHON,
   default bench/.venv-dbos/bin/python; `make bench-anchors` creates it) against
   ANCHORS_DBOS_DATABASE_URL (a scratch database it drops and recreates);
2. ours, `bench.workflows`' own machinery (its workers, scheduler, 3-step and
   await workflows and measurements) against ANCHORS_DATABASE_URL (a scratch
   database: its public schema is dropped) and ANCHORS_REDIS_URL (flushed);

then prints figure / DBOS / ours / ratio with the issue's targets and writes
bench/results/anchors.json. Both scratch databases are dropped at the end
(ANCHORS_KEEP=1 keeps them). Sizes: ANCHORS_RUNS, ANCHORS_RESUMES,
ANCHORS_WORKERS (both sides).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, make_url, text

from bench import workflows
from bench.anchors_table import rows, table
from bench.common import services

ROOT = Path(__file__).resolve().parent.parent
DBOS_PYTHON = os.environ.get(
    "ANCHORS_DBOS_PYTHON", str(ROOT / "bench" / ".venv-dbos" / "bin" / "python")
)
DBOS_URL = os.environ.get(
    "ANCHORS_DBOS_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/bench_anchors_dbos"
)
OURS_URL = os.environ.get(
    "ANCHORS_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/bench_anchors_ours"
)
REDIS_URL = os.environ.get("ANCHORS_REDIS_URL", "redis://127.0.0.1:6379/15")
WORKERS = os.environ.get("ANCHORS_WORKERS", "2")
RUNS = os.environ.get("ANCHORS_RUNS", "300")
RESUMES = os.environ.get("ANCHORS_RESUMES", "60")


def percentiles(values: list[float]) -> dict[str, float]:
    return {
        "p50": workflows.pct(values, 50),
        "p95": workflows.pct(values, 95),
        "p99": workflows.pct(values, 99),
        "n": len(values),
    }


def run_dbos() -> dict[str, Any]:
    if not Path(DBOS_PYTHON).exists():
        raise SystemExit(f"{DBOS_PYTHON} is missing: `make bench-anchors` creates DBOS's venv")
    env = {
        **os.environ,
        "ANCHORS_DBOS_DATABASE_URL": DBOS_URL,
        "ANCHORS_WORKERS": WORKERS,
        "ANCHORS_RUNS": RUNS,
        "ANCHORS_RESUMES": RESUMES,
    }
    out = subprocess.run(
        [DBOS_PYTHON, str(ROOT / "bench" / "anchors_dbos.py")],
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    raw: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    raw["send_recv_ms"] = percentiles(raw["send_recv_ms"])
    return raw


def run_ours() -> dict[str, Any]:
    """bench.workflows' machinery, sized like DBOS's side; its services() takes the
    scratch PostgreSQL and Redis from BENCH_DATABASE_URL / BENCH_REDIS_URL."""
    os.environ.update(BENCH_DATABASE_URL=OURS_URL, BENCH_REDIS_URL=REDIS_URL)
    workflows.WORKERS, workflows.RUNS, workflows.RESUMES = int(WORKERS), int(RUNS), int(RESUMES)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-anchors-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        bench = workflows.Bench(db_url, redis_url, tmp / "instance")
        bench.start()
        stack.callback(bench.stop)
        runs = bench.runs_per_s()
        resume = bench.event_resume_ms()
    return {"runs_per_s": round(runs, 1), "event_resume_ms": percentiles(resume)}


def ensure_database(url: str) -> None:
    u = make_url(url).set(drivername="postgresql+psycopg")
    admin = create_engine(u.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        exists = conn.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": u.database}
        ).first()
        if not exists:
            conn.execute(text(f'CREATE DATABASE "{u.database}"'))
    admin.dispose()


def drop_database(url: str) -> None:
    u = make_url(url).set(drivername="postgresql+psycopg")
    admin = create_engine(u.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{u.database}" WITH (FORCE)'))
    admin.dispose()


def main() -> dict[str, Any]:
    load = os.getloadavg()[0]
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    try:
        dbos = run_dbos()
        ensure_database(OURS_URL)
        ours = run_ours()
    finally:
        if os.environ.get("ANCHORS_KEEP") != "1":
            drop_database(DBOS_URL)
            drop_database(OURS_URL)
    result: dict[str, Any] = {
        "measured_at": started,
        "took_s": round(time.perf_counter() - t0, 1),
        "cpus": os.cpu_count(),
        "load_average_at_start": round(load, 1),
        "python": platform.python_version(),
        "workers": int(WORKERS),
        "runs": int(RUNS),
        "resumes": int(RESUMES),
        "dbos": dbos,
        "ours": ours,
    }
    result["rows"] = rows(dbos, ours)
    path = ROOT / "bench" / "results" / "anchors.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(table(result))
    print(f"\nwrote {path.relative_to(ROOT)}")
    return result


if __name__ == "__main__":
    main()
