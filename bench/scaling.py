"""Connections per process, and runs/s by worker count: `python -m bench.scaling`
(or `make bench-scaling`).

Uses BENCH_DATABASE_URL (a scratch PostgreSQL database, reached over TCP: its
public schema is dropped) or a temporary SQLite file, and BENCH_REDIS_URL or an
embedded Redis, with real processes as `bench.workflows` starts them.

1. Connections held per process. The Procfile's set: gunicorn (2 workers x 4
   threads, the production app), one RQ worker and the scheduler. The database
   connections of each process are sampled every BENCH_SCALING_SAMPLE_S (0.1 s):
   on PostgreSQL, `pg_stat_activity`'s backends of the bench database, each
   mapped to the process that owns its client socket; on SQLite, the processes'
   open descriptors on the database file. Three windows:
   - idle before: BENCH_SCALING_IDLE_SECONDS (3) once everything has started;
   - peak: while 8 client threads (the web workers' threads) request the
     signed-in `/profile` and `/healthz` for BENCH_SCALING_LOAD_SECONDS (5) and
     3-step workflow runs are triggered, 10 every 0.25 s, then run to the end;
   - idle after: the same quiet window again (what the pools keep).
   Each figure is the most seen at once in its window, per process and per
   process type (the sum over a type's processes in one sample); "busy" counts
   the connections in a statement or a transaction.
2. Runs/s by worker count. For each of BENCH_SCALING_WORKERS (1,2,4) worker
   processes (and the scheduler), on a fresh database and Redis:
   `bench.workflows`' 3-step runs/s (BENCH_SCALING_RUNS, 2,000 runs) and
   event -> resume p50/p95/p99 (BENCH_SCALING_RESUMES, 100 awaited events),
   with the load average (1, 5, 15 min) at the start and the end of the round
   and the most connections each process held during it.

Prints the tables and writes bench/results/scaling.json (one entry per backend).
"""

from __future__ import annotations

import os
import platform
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psutil
import psycopg
import requests
from sqlalchemy.engine import make_url

import bench.workflows as flows
from bench.common import services, write_result
from bench.servers import GUNICORN_THREADS, GUNICORN_WORKERS, start_gunicorn, stop
from bench.web import USER_AGENT, signed_in
from webapp.eventstore import positions

ROOT = Path(__file__).resolve().parent.parent
WORKER_COUNTS = [int(n) for n in os.environ.get("BENCH_SCALING_WORKERS", "1,2,4").split(",")]
RUNS = int(os.environ.get("BENCH_SCALING_RUNS", "2000"))
RESUMES = int(os.environ.get("BENCH_SCALING_RESUMES", "100"))
SAMPLE_S = float(os.environ.get("BENCH_SCALING_SAMPLE_S", "0.1"))
IDLE_S = float(os.environ.get("BENCH_SCALING_IDLE_SECONDS", "3"))
LOAD_S = float(os.environ.get("BENCH_SCALING_LOAD_SECONDS", "5"))
CLIENTS = GUNICORN_WORKERS * GUNICORN_THREADS
OTHER = "other (not matched)"
BENCH = "bench (this process)"
PG_BACKENDS = (
    "SELECT client_port, state FROM pg_stat_activity WHERE datname = current_database()"
    " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


def process_type(role: str) -> str:
    """'web worker 2' -> 'web', 'worker 1' -> 'worker', 'scheduler' -> 'scheduler'."""
    return role.split(" ", 1)[0] if role not in (OTHER, BENCH) else role


class Holders:
    """Database connections per process (role -> pid), as one sample."""

    def __init__(self, db_url: str, roles: dict[str, int]) -> None:
        self.roles = {**roles, BENCH: os.getpid()}
        url = make_url(db_url)
        self.sqlite = url.get_backend_name() == "sqlite"
        self.path = os.path.realpath(url.database or "")
        self.port = url.port or 5432
        self.conn = (
            None
            if self.sqlite
            else psycopg.connect(
                url.set(drivername="postgresql").render_as_string(hide_password=False),
                autocommit=True,
            )
        )

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def sample(self) -> dict[str, tuple[int, int]]:
        """role -> (connections held, of them busy)."""
        out = dict.fromkeys([*self.roles, OTHER], (0, 0))
        if self.conn is None:
            for role, pid in self.roles.items():
                try:
                    held = sum(1 for f in psutil.Process(pid).open_files() if f.path == self.path)
                except psutil.Error:
                    held = 0
                out[role] = (held, 0)  # SQLite: no server to say which are busy
            return out
        backends = self.conn.execute(PG_BACKENDS).fetchall()
        owner = {}  # client port -> role, read after the backends: their sockets exist
        for role, pid in self.roles.items():
            try:
                for c in psutil.Process(pid).net_connections(kind="tcp"):
                    if c.raddr and c.raddr.port == self.port:
                        owner[c.laddr.port] = role
            except psutil.Error:
                continue
        for port, state in backends:
            role = owner.get(port, OTHER)
            held, busy = out[role]
            out[role] = (held + 1, busy + (state != "idle"))
        return out


@contextmanager
def watched(holders: Holders) -> Iterator[dict[str, dict[str, int]]]:
    """While the block runs, sample every SAMPLE_S: the most connections seen
    at once per process and per process type ('held', 'busy')."""
    most: dict[str, dict[str, int]] = {}
    done = threading.Event()

    def keep(name: str, held: int, busy: int) -> None:
        seen = most.setdefault(name, {"held": 0, "busy": 0})
        seen["held"], seen["busy"] = max(seen["held"], held), max(seen["busy"], busy)

    def loop() -> None:
        while True:
            by_type: dict[str, tuple[int, int]] = {}
            for role, (held, busy) in holders.sample().items():
                keep(role, held, busy)
                h, b = by_type.get(process_type(role), (0, 0))
                by_type[process_type(role)] = (h + held, b + busy)
            for kind, (held, busy) in by_type.items():
                keep(f"type: {kind}", held, busy)
            if done.wait(SAMPLE_S):
                return

    thread = threading.Thread(target=loop, name="bench-connections", daemon=True)
    thread.start()
    try:
        yield most
    finally:
        done.set()
        thread.join(30)


def fresh_bench(stack: ExitStack, tmp: Path, workers: int) -> flows.Bench:
    """A fresh database and Redis in `tmp`, `workers` RQ workers and the scheduler."""
    tmp.mkdir()
    db_url, redis_url = services(stack, tmp, reset=True)
    positions.forget()  # the database may have been recreated under the same URL
    bench = flows.Bench(db_url, redis_url, tmp / "instance")
    bench.env["MAIL_BACKEND"] = "file"
    flows.WORKERS = workers
    bench.start()
    stack.callback(bench.stop)
    time.sleep(2)  # the workers' start-up work (cursors, first sweeps) is over
    return bench


def pids_of(bench: flows.Bench) -> dict[str, int]:
    """The live workers' and the scheduler's pids, by role."""
    out: dict[str, int] = {}
    for p in bench.procs:
        if p.poll() is None:
            module = psutil.Process(p.pid).cmdline()[-1]
            if module == "worker.run_worker":
                out[f"worker {sum(r.startswith('worker') for r in out) + 1}"] = p.pid
            elif module == "worker.run_scheduler":
                out["scheduler"] = p.pid
    return out


def web_load(base: str, cookie: str, seconds: float) -> dict[str, int]:
    """CLIENTS threads, each requesting `/profile` (signed in) and `/healthz`
    in turn for `seconds`: the count of each answer's status."""
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def client() -> None:
        session = requests.Session()
        session.headers.update({"Cookie": cookie, "User-Agent": USER_AGENT})
        paths = ["/profile", "/healthz"]
        i = 0
        while time.monotonic() < end:
            try:
                code = str(session.get(base + paths[i % 2], timeout=30).status_code)
            except requests.RequestException as exc:
                code = type(exc).__name__
            i += 1
            with lock:
                statuses[code] = statuses.get(code, 0) + 1

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def connections_held(tmp: Path) -> dict[str, Any]:
    with ExitStack() as stack:
        bench = fresh_bench(stack, tmp, workers=1)
        web, base = start_gunicorn(
            "bench.web:bench_app()", "/healthz", bench.env, tmp / "web.log", timeout=120
        )
        stack.callback(stop, web)
        roles = {"web master": web.pid}
        for i, child in enumerate(psutil.Process(web.pid).children(), 1):
            roles[f"web worker {i}"] = child.pid
        roles.update(pids_of(bench))
        holders = Holders(bench.env["DATABASE_URL"], roles)
        stack.callback(holders.close)
        time.sleep(IDLE_S)
        with watched(holders) as before:
            time.sleep(IDLE_S)
        cookie, _csrf = signed_in(base, "bench-scaling@example.com")
        with watched(holders) as peak:
            got: dict[str, int] = {}
            clients = threading.Thread(target=lambda: got.update(web_load(base, cookie, LOAD_S)))
            clients.start()
            triggered = 0
            while clients.is_alive():
                bench.emit("bench.go", [{"i": triggered + i} for i in range(10)])
                triggered += 10
                time.sleep(0.25)
            clients.join()
            bench.until(lambda: bench.count(flows.THREE_STEP.name, "completed") >= triggered)
        time.sleep(1)
        with watched(holders) as after:
            time.sleep(IDLE_S)
    names = [*roles, BENCH, OTHER]
    kinds = list(dict.fromkeys(process_type(r) for r in roles))  # the product's

    def figures(key: str) -> dict[str, int]:
        return {
            "idle_before": before[key]["held"],
            "peak": peak[key]["held"],
            "peak_busy": peak[key]["busy"],
            "idle_after": after[key]["held"],
        }

    return {
        "per_process": {name: figures(name) for name in names},
        "per_type": {kind: figures(f"type: {kind}") for kind in kinds},
        "load": {
            "web_seconds": LOAD_S,
            "web_clients": CLIENTS,
            "web_statuses": got,
            "workflow_runs": triggered,
        },
    }


def by_workers(tmp: Path, workers: int) -> dict[str, Any]:
    flows.RUNS, flows.RESUMES = RUNS, RESUMES
    with ExitStack() as stack:
        bench = fresh_bench(stack, tmp, workers)
        holders = Holders(bench.env["DATABASE_URL"], pids_of(bench))
        stack.callback(holders.close)
        load_start = os.getloadavg()
        with watched(holders) as peak:
            runs = bench.runs_per_s()
            resume = bench.event_resume_ms()
        load_end = os.getloadavg()
    return {
        "workers": workers,
        "runs": RUNS,
        "runs_per_s": round(runs, 1),
        "event_resume_ms": {
            "p50": flows.pct(resume, 50),
            "p95": flows.pct(resume, 95),
            "p99": flows.pct(resume, 99),
            "n": len(resume),
        },
        "load_avg_start": [round(x, 2) for x in load_start],
        "load_avg_end": [round(x, 2) for x in load_end],
        "peak_connections": {name: seen["held"] for name, seen in peak.items()},
    }


def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        held = connections_held(Path(tmp) / "connections")
        print_connections(held)
        rounds = []
        for n in WORKER_COUNTS:
            rounds.append(by_workers(Path(tmp) / f"workers-{n}", n))
            print_round(rounds[-1], first=n == WORKER_COUNTS[0])
    db_url = os.environ.get("BENCH_DATABASE_URL") or "sqlite"
    result = {
        "backend": "postgresql" if db_url.startswith("postgres") else "sqlite",
        "redis": "external" if os.environ.get("BENCH_REDIS_URL") else "embedded",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "sample_seconds": SAMPLE_S,
        "connections": held,
        "by_workers": rounds,
    }
    write_result(ROOT / "bench" / "results" / "scaling.json", result)
    return result


def print_connections(held: dict[str, Any]) -> None:
    ld = held["load"]
    print(
        f"\nconnections held per process, most at once (sampled every {SAMPLE_S:g} s);"
        f" peak: {ld['web_clients']} clients on /profile and /healthz for"
        f" {ld['web_seconds']:g} s {ld['web_statuses']}, {ld['workflow_runs']} workflow runs\n"
    )
    rows = {**held["per_process"], **{f"all {k}": v for k, v in held["per_type"].items()}}
    w = max(len(name) for name in rows)
    head = f"{'process':<{w}} {'idle before':>11} {'peak':>5} {'busy':>5} {'idle after':>10}"
    print(head)
    print("-" * len(head))
    for name, f in rows.items():
        if name == f"all {next(iter(held['per_type']))}":
            print("-" * len(head))
        print(
            f"{name:<{w}} {f['idle_before']:>11} {f['peak']:>5} {f['peak_busy']:>5}"
            f" {f['idle_after']:>10}"
        )


def print_round(r: dict[str, Any], first: bool) -> None:
    if first:
        print(
            f"\n{'workers':>7} {'runs/s':>8} {'resume p50':>10} {'p95':>6} {'p99':>6}"
            f"  {'load avg start -> end':<22} most connections per type"
        )
    res = r["event_resume_ms"]
    load = f"{r['load_avg_start'][0]:.2f} -> {r['load_avg_end'][0]:.2f}"
    types = {
        k.removeprefix("type: "): v
        for k, v in r["peak_connections"].items()
        if k.startswith("type: ") and v
    }
    print(
        f"{r['workers']:>7} {r['runs_per_s']:>8} {res['p50']:>10} {res['p95']:>6} {res['p99']:>6}"
        f"  {load:<22} {types}",
        flush=True,
    )


if __name__ == "__main__":
    main()
