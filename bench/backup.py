"""Backup bench: `python -m bench.backup` (not part of `make bench`; minutes).

Builds a log of BENCH_BACKUP_EVENTS (1,000,000) events with their runs
(`bench.history_load`, as `make bench-history` does) in a SQLite file, or in
BENCH_DATABASE_URL (a scratch PostgreSQL database: its schema is dropped
first), serves the app with gunicorn (the Procfile's 2 x 4), signs a user in,
then:

1. the web's latency without a backup: BENCH_CLIENTS (4) clients in a closed
   loop on `GET /profile` for BENCH_SECONDS (10);
2. `flask backup create` in a process of its own, timed, with the same load
   running during it (the web p95 during the copy against the p95 without:
   their ratio is the figure; both from the same run);
3. the backup's size, and `flask backup verify` timed.

Writes bench/results/backup.json (one entry per backend) and prints it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import create_engine

from bench import history_load
from bench.common import services, write_result
from bench.servers import start_gunicorn, stop
from bench.web import USER_AGENT, signed_in

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "backup.json"
EVENTS = int(os.environ.get("BENCH_BACKUP_EVENTS", "1000000"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


def load(base: str, cookie: str, until: threading.Event) -> list[float]:
    """Closed-loop GET /profile from CLIENTS threads until `until` is set."""
    latencies: list[float] = []
    lock = threading.Lock()

    def client() -> None:
        s = requests.Session()
        headers = {"Cookie": cookie, "User-Agent": USER_AGENT}
        while not until.is_set():
            t0 = time.perf_counter()
            r = s.get(f"{base}/profile", headers=headers, timeout=60)
            took = time.perf_counter() - t0
            if r.status_code != 200:
                raise RuntimeError(f"/profile answered {r.status_code}")
            with lock:
                latencies.append(took)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def timed_load(base: str, cookie: str, seconds: float) -> list[float]:
    done = threading.Event()
    threading.Timer(seconds, done.set).start()
    return load(base, cookie, done)


def flask(env: dict[str, str], *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"flask {' '.join(args)}: {done.stderr[-2000:]}")
    return took, done.stdout


def main() -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-backup-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        t0 = time.perf_counter()
        engine = create_engine(db_url)
        with engine.begin() as conn:
            loaded = history_load.load(conn, EVENTS)
            history_load.catch_up(conn, loaded)
        history_load.analyze(engine)
        engine.dispose()
        build_s = time.perf_counter() - t0
        print(f"built {loaded} events in {build_s:.0f} s", flush=True)
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "INSTANCE_PATH": str(tmp / "instance"),
            "SECRET_KEY": secrets.token_urlsafe(32),
            "LOG_LEVEL": "WARNING",
            "WORKFLOW_MODULES": "bench.history_load",
        }
        app, base = start_gunicorn(
            "bench.web:bench_app()", "/healthz", env, tmp / "app.log", timeout=300
        )
        stack.callback(stop, app)
        cookie, _csrf = signed_in(base, f"bench-{secrets.token_hex(4)}@example.com")
        timed_load(base, cookie, 2)  # warm-up
        without = timed_load(base, cookie, SECONDS)

        target = tmp / "backup"
        done = threading.Event()
        during: list[float] = []
        loader = threading.Thread(target=lambda: during.extend(load(base, cookie, done)))
        loader.start()
        try:
            backup_s, out = flask(env, "backup", "create", str(target))
        finally:
            done.set()
            loader.join()
        manifest = json.loads((target / "manifest.json").read_text())
        size = sum(f["bytes"] for f in manifest["files"].values())
        verify_s, _ = flask(env, "backup", "verify", str(target))
        print(out.strip())

    p95_without, p95_during = _p(without, 0.95), _p(during, 0.95)
    return {
        "backend": "postgresql" if db_url.startswith("postgresql") else "sqlite",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "load_average_at_end": os.getloadavg()},
        "events": loaded,
        "build_seconds": round(build_s, 1),
        "backup": {
            "seconds_command": round(backup_s, 2),
            "seconds_copy_and_checks": manifest["seconds"],
            "bytes": size,
            "mib": round(size / 2**20, 1),
            "verify_seconds": round(verify_s, 2),
        },
        "web_profile": {
            "clients": CLIENTS,
            "without_backup": {
                "requests": len(without),
                "p50_ms": _p(without, 0.5),
                "p95_ms": p95_without,
            },
            "during_backup": {
                "requests": len(during),
                "p50_ms": _p(during, 0.5),
                "p95_ms": p95_during,
            },
            "p95_ratio_during_to_without": round(p95_during / p95_without, 2),
        },
    }


if __name__ == "__main__":
    result = main()
    print(json.dumps(result, indent=2))
    write_result(RESULTS, result)
