"""The soak: `make soak` (one hour; not part of `make test` or `make bench`).

The whole product runs as deployed: gunicorn (the Procfile's 2 workers x 4
threads), two RQ workers and the scheduler, on a SQLite file (or
SOAK_DATABASE_URL, a scratch PostgreSQL database whose schema is dropped
first) and a Redis of its own (embedded, or SOAK_REDIS_URL, flushed first).
This process is their supervisor and their load:

- web traffic on the signed-in pages (`/profile` whole and as htmx,
  `/privacy`) from SOAK_CLIENTS (4) client threads, paced to SOAK_FRACTION (0.5)
  of the capacity measured on `/profile` at start (or SOAK_WEB_RPS), plus a
  registration every 30 s (an account mail through the outbox) and a data
  export every minute;
- SOAK_TRIGGERS_PER_S (2) workflow triggers a second: each run waits on a 3 s
  timer, then for its payment event (published 6 s after the trigger), then
  sends a mail;
- every SOAK_KILL_EVERY minutes (10) one worker and the scheduler are killed
  (SIGKILL) and started again at once.

Every minute it records, per process: resident memory, open file descriptors
and open database connections; Redis memory; row counts and the database's
size; the p95 of the web pages and of event -> resume (from the payment
event's commit to the run's `step.resumed`). After SOAK_MINUTES (60) the load
stops and the runs drain (SOAK_DRAIN_SECONDS, 600); the soak fails (exit 1) when a run is lost (a trigger
without a run), doubled (two runs for one order) or left open, or when a
figure that must stay bounded grows: its least-squares slope over the minutes
after the warm-up (the first sixth) is significantly above zero (t > 3) and
would add more than SOAK_MAX_GROWTH (10 %) of its level per hour. Table sizes
grow by design: their growth per hour is reported, not judged.

Output: one line per minute on stdout, and everything in
bench/results/soak.json (or SOAK_OUT).
"""

from __future__ import annotations

import json
import math
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests
from redis import Redis
from sqlalchemy import create_engine, text

from bench.servers import free_port
from bench.soak_flows import NAME, PAID, TRIGGER
from bench.web import USER_AGENT, csrf_of, signed_in

ROOT = Path(__file__).resolve().parent.parent
MINUTES = float(os.environ.get("SOAK_MINUTES", "60"))
KILL_EVERY = float(os.environ.get("SOAK_KILL_EVERY", "10"))
FRACTION = float(os.environ.get("SOAK_FRACTION", "0.5"))
WEB_RPS = float(os.environ.get("SOAK_WEB_RPS", "0"))  # 0: FRACTION x measured capacity
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "4"))
TRIGGERS_PER_S = float(os.environ.get("SOAK_TRIGGERS_PER_S", "2"))
SAMPLE_S = float(os.environ.get("SOAK_SAMPLE_SECONDS", "60"))
MAX_GROWTH = float(os.environ.get("SOAK_MAX_GROWTH", "0.10"))
PAY_AFTER_S = 6.0
DRAIN_S = float(os.environ.get("SOAK_DRAIN_SECONDS", "600"))  # the runs settle after the load
OUT = Path(os.environ.get("SOAK_OUT") or ROOT / "bench" / "results" / "soak.json")
TABLES = ("events", "workflow_runs", "workflow_run_pending", "mail_outbox", "export_jobs")


# -- the processes ------------------------------------------------------------------


class Child:
    """One supervised process (killed and started again by the soak)."""

    def __init__(self, role: str, args: list[str], env: dict[str, str], log: Path) -> None:
        self.role, self.args, self.env, self.log = role, args, env, log
        self.popen: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.args, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        self.starts += 1
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def kill(self) -> None:
        assert self.popen is not None
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


def children_of(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return sorted(out)


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


def fds(pid: int) -> list[str]:
    folder = Path(f"/proc/{pid}/fd")
    out = []
    try:
        for fd in folder.iterdir():
            try:
                out.append(os.readlink(fd))
            except OSError:
                continue
    except OSError:
        pass
    return out


# -- the load ---------------------------------------------------------------------


@dataclass
class Load:
    base: str
    users: list[tuple[str, str, str]]  # (address, cookie, csrf)
    rps: float
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    def count(self, what: str) -> None:
        with self.lock:
            self.statuses[what] = self.statuses.get(what, 0) + 1

    def client(self, n: int) -> None:
        session = requests.Session()
        address, cookie, _csrf = self.users[n % len(self.users)]
        me = {"Cookie": cookie, "User-Agent": USER_AGENT}
        pages = [
            ("/profile", me),
            ("/profile", {**me, "HX-Request": "true"}),
            ("/privacy", me),
        ]
        every = CLIENTS / self.rps
        due = time.monotonic() + random.random() * every
        i = n
        while not self.stop.is_set():
            pause = due - time.monotonic()
            if pause > 0:
                self.stop.wait(pause)
            due = max(due + every, time.monotonic() - every)  # no burst after a stall
            path, headers = pages[i % len(pages)]
            i += 1
            started = time.perf_counter()
            try:
                r = session.get(self.base + path, headers=headers, timeout=30)
                code = str(r.status_code)
            except requests.RequestException as exc:
                code = type(exc).__name__
            took = time.perf_counter() - started
            with self.lock:
                self.latencies.append(took)
                self.statuses[code] = self.statuses.get(code, 0) + 1

    def take_latencies(self) -> list[float]:
        with self.lock:
            out, self.latencies = self.latencies, []
        return out


def register_one(base: str, n: int) -> str:
    s = requests.Session()
    token = csrf_of(s.get(f"{base}/register").text)
    address = f"soak-{n}-{secrets.token_hex(3)}@example.com"
    pw = "correct horse battery staple"
    r = s.post(
        f"{base}/register",
        data={"email": address, "password": pw, "confirm": pw, "csrf_token": token},
    )
    return str(r.status_code)


def request_export(base: str, user: tuple[str, str, str]) -> str:
    _address, cookie, csrf = user
    r = requests.post(
        f"{base}/privacy/export",
        headers={
            "Cookie": cookie,
            "User-Agent": USER_AGENT,
            "HX-Request": "true",
            "X-CSRFToken": csrf,
        },
        timeout=30,
    )
    return str(r.status_code)


def capacity(base: str, user: tuple[str, str, str], seconds: float = 5) -> float:
    """Requests a second that CLIENTS closed-loop clients get from `/profile`."""
    _a, cookie, _c = user
    headers = {"Cookie": cookie, "User-Agent": USER_AGENT}
    done = [0] * CLIENTS
    end = time.monotonic() + seconds

    def loop(i: int) -> None:
        s = requests.Session()
        while time.monotonic() < end:
            s.get(f"{base}/profile", headers=headers, timeout=30)
            done[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / seconds


# -- the figures ------------------------------------------------------------------


def p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def slope(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Least squares: (slope per minute, its t statistic, mean level)."""
    n = len(points)
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 3 or sxx == 0:
        return 0.0, 0.0, my
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a = my - b * mx
    resid = sum((y - (a + b * x)) ** 2 for x, y in points)
    se = math.sqrt(resid / (n - 2) / sxx) if resid > 0 else 0.0
    t = b / se if se > 0 else (math.inf if b > 0 else 0.0)
    return b, t, my


def judge(series: dict[str, list[tuple[float, float]]], warmup: float) -> dict[str, Any]:
    """Each bounded series after the warm-up: grows without bound when its
    slope is significant (t > 3) and material (> MAX_GROWTH of its level an hour)."""
    out = {}
    for name, points in series.items():
        kept = [(x, y) for x, y in points if x >= warmup and not math.isnan(y)]
        if len(kept) < 3:
            out[name] = {"verdict": "too few samples", "samples": len(kept)}
            continue
        b, t, level = slope(kept)
        per_hour = b * 60
        share = per_hour / level if level else (math.inf if per_hour > 0 else 0.0)
        grows = t > 3 and share > MAX_GROWTH
        out[name] = {
            "per_hour": round(per_hour, 3),
            "share_of_level_per_hour": round(share, 4) if math.isfinite(share) else None,
            "t": round(t, 2) if math.isfinite(t) else None,
            "level": round(level, 2),
            "verdict": "GROWS" if grows else "bounded",
        }
    return out


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite")
        self.path = url.split("///", 1)[1] if self.sqlite else ""
        self.engine = create_engine(url)

    def tables(self) -> dict[str, float]:
        out: dict[str, float] = {}
        with self.engine.connect() as conn:
            for name in TABLES:
                try:
                    out[f"rows {name}"] = conn.execute(
                        text(f"SELECT count(*) FROM {name}")  # noqa: S608 (our constants)
                    ).scalar_one()
                except Exception:
                    conn.rollback()
            out["rows mail_outbox pending"] = conn.execute(
                text("SELECT count(*) FROM mail_outbox WHERE status = 'pending'")
            ).scalar_one()
            # the soak's own waits: bounded (the accounts' verification waits last a day)
            out["rows soak-order pending"] = conn.execute(
                text("SELECT count(*) FROM workflow_run_pending WHERE workflow_name = :n"),
                {"n": NAME},
            ).scalar_one()
            if self.sqlite:
                size = sum(
                    os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p)
                )
            else:
                size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar()
        out["database MiB"] = round((size or 0) / 2**20, 2)
        return out

    def connections(self, pids: dict[str, int]) -> dict[str, float]:
        """Open connections per process: SQLite, the process's descriptors on
        the file; PostgreSQL, server backends by client port owner (counted all
        together, as pg_stat_activity sees them)."""
        if self.sqlite:
            return {role: sum(1 for f in fds(pid) if f == self.path) for role, pid in pids.items()}
        with self.engine.connect() as conn:
            n = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
        return {"all processes": n}

    def runs(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT status, count(*) FROM workflow_runs WHERE workflow_name = :n "
                    "GROUP BY status"
                ),
                {"n": NAME},
            ).all()
        return {status: n for status, n in rows}

    def per_order(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT subject_id, count(*) FROM workflow_runs WHERE workflow_name = :n "
                    "GROUP BY subject_id"
                ),
                {"n": NAME},
            ).all()
        return {s: n for s, n in rows}

    def resumed_after_payment(self, since: datetime) -> dict[str, datetime]:
        """order -> when its run's wait for the payment resumed (step 1)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT r.subject_id, e.recorded_at, e.payload FROM events e "
                    "JOIN workflow_runs r ON r.run_id = e.aggregate_id "
                    "WHERE e.aggregate_type = 'workflow-run' AND e.type = 'workflow.step.resumed' "
                    "AND e.recorded_at >= :since AND r.workflow_name = :n"
                ),
                {"since": since if not self.sqlite else since.replace(tzinfo=None), "n": NAME},
            ).all()
        out = {}
        for subject, at, payload in rows:
            data = json.loads(payload) if isinstance(payload, str) else payload
            if data.get("stepIndex") == 1:
                if isinstance(at, str):
                    at = datetime.fromisoformat(at)
                out[subject] = at if at.tzinfo else at.replace(tzinfo=UTC)
        return out


# -- the run ----------------------------------------------------------------------


def publisher(
    app: Any,
    stop: threading.Event,
    publish: Callable[..., Any],
    paid_at: dict[str, datetime],
) -> tuple[threading.Thread, list[str]]:
    """Triggers at TRIGGERS_PER_S; each order's payment PAY_AFTER_S later."""
    placed: list[str] = []
    due_payments: list[tuple[float, str]] = []

    def loop() -> None:
        with app.app_context():
            run()

    def run() -> None:
        n = 0
        every = 1 / TRIGGERS_PER_S
        nxt = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            if now >= nxt:
                order = f"o{n}"
                n += 1
                try:
                    publish(TRIGGER, "order", order, {"n": n})
                    placed.append(order)
                    due_payments.append((now + PAY_AFTER_S, order))
                except Exception as exc:  # counted as not placed: no run expected
                    print(f"trigger failed: {type(exc).__name__}: {exc}", flush=True)
                nxt += every
            while due_payments and due_payments[0][0] <= now:
                _, order = due_payments.pop(0)
                try:
                    publish(PAID, "payment", order, {"order": order})
                    paid_at[order] = datetime.now(UTC)
                except Exception as exc:
                    due_payments.append((now + 1, order))
                    print(f"payment failed: {type(exc).__name__}: {exc}", flush=True)
            stop.wait(max(0.0, min(nxt, due_payments[0][0] if due_payments else nxt) - now))
        # the payments still due go out, so every run can finish
        for _, order in due_payments:
            publish(PAID, "payment", order, {"order": order})
            paid_at[order] = datetime.now(UTC)

    t = threading.Thread(target=loop, name="soak-publisher", daemon=True)
    t.start()
    return t, placed


def _stop_on_sigterm() -> None:
    """SIGTERM (and SIGINT, also when started in the background) ends the soak
    through its clean-up: every process it started is stopped."""

    def stop(_sig: int, _frame: Any) -> None:
        raise SystemExit("soak stopped by a signal")

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)


def main() -> int:  # noqa: C901, PLR0915 (one script, read top to bottom)
    _stop_on_sigterm()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        redis_url = os.environ.get("SOAK_REDIS_URL")
        if redis_url:
            Redis.from_url(redis_url).flushdb()
        else:
            from webapp.core import embedded_redis

            proc = embedded_redis.start(tmp / "redis.sock")
            stack.callback(embedded_redis.stop, proc)
            redis_url = embedded_redis.url_for(tmp / "redis.sock")
        db_url = os.environ.get("SOAK_DATABASE_URL") or f"sqlite:///{tmp / 'soak.db'}"
        if db_url.startswith("postgres"):
            eng = create_engine(db_url)
            with eng.begin() as conn:
                conn.execute(text("DROP SCHEMA public CASCADE"))
                conn.execute(text("CREATE SCHEMA public"))
            eng.dispose()
        from webapp.core.migrate import upgrade

        upgrade(db_url)
        metrics = tmp / "metrics"
        metrics.mkdir()
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "INSTANCE_PATH": str(tmp / "instance"),
            "SECRET_KEY": secrets.token_urlsafe(32),
            "LOG_LEVEL": "WARNING",
            "MAIL_BACKEND": "file",
            "WORKFLOW_MODULES": "bench.soak_flows",
            "PROMETHEUS_MULTIPROC_DIR": str(metrics),
            "PYTHONPATH": str(ROOT),
        }
        os.environ.update(
            {k: env[k] for k in ("PROMETHEUS_MULTIPROC_DIR",)}
        )  # this process's app too
        py = sys.executable
        gunicorn = [
            py, "-m", "gunicorn", "--workers", "2", "--threads", "4",
            "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "bench.web:bench_app()",
        ]  # fmt: skip
        kids = {
            "web": Child("web", gunicorn, env, tmp / "web.log"),
            "worker-1": Child("worker-1", [py, "-m", "worker.run_worker"], env, tmp / "w1.log"),
            "worker-2": Child("worker-2", [py, "-m", "worker.run_worker"], env, tmp / "w2.log"),
            "scheduler": Child(
                "scheduler", [py, "-m", "worker.run_scheduler"], env, tmp / "sched.log"
            ),
        }
        for kid in kids.values():
            stack.callback(kid.stop)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"web did not start:\n{(tmp / 'web.log').read_text()[-3000:]}")
            time.sleep(0.3)

        from webapp import create_app
        from webapp.core.config import Config
        from webapp.publish import publish

        app = create_app(
            Config.from_env({k: v for k, v in env.items() if k != "PROMETHEUS_MULTIPROC_DIR"})
        )
        stack.enter_context(app.app_context())
        r = Redis.from_url(redis_url)
        database = Database(db_url)

        users = []
        for i in range(CLIENTS):
            address = f"soak-client-{i}@example.com"
            cookie, csrf = signed_in(base, address)
            users.append((address, cookie, csrf))
        cap = capacity(base, users[0])
        rps = WEB_RPS or max(1.0, FRACTION * cap)
        print(
            f"soak: {MINUTES:g} min, /profile capacity {cap:.0f} req/s, web load {rps:.1f} req/s "
            f"from {CLIENTS} clients, {TRIGGERS_PER_S:g} triggers/s, a worker and the "
            f"scheduler killed every {KILL_EVERY:g} min; {db_url.split(':')[0]}",
            flush=True,
        )
        load = Load(base, users, rps)
        clients = [
            threading.Thread(target=load.client, args=(i,), daemon=True) for i in range(CLIENTS)
        ]
        for t in clients:
            t.start()
        paid_at: dict[str, datetime] = {}
        pub_thread, placed = publisher(app, load.stop, publish, paid_at)

        samples: list[dict[str, Any]] = []
        series: dict[str, list[tuple[float, float]]] = {}
        measured: set[str] = set()
        started = time.monotonic()
        looked_since = datetime.now(UTC)
        next_sample = started + SAMPLE_S
        # Half a sample after the minute: a process started again has warmed up
        # before it is measured.
        next_kill = started + KILL_EVERY * 60 + SAMPLE_S / 2
        kills = 0
        killed_at: list[float] = []  # wall-clock seconds of each kill
        side: dict[str, int] = {}

        def mails_and_exports() -> None:
            """A registration every 30 s, an export every other time: in a
            thread of their own, so a slow one never delays a sample or a kill."""
            n = 0
            while not load.stop.wait(30):
                codes = []
                try:
                    codes.append("register " + register_one(base, n))
                    if n % 2:
                        codes.append("export " + request_export(base, users[n % len(users)]))
                except requests.RequestException as exc:
                    codes.append(type(exc).__name__)
                with load.lock:
                    for code in codes:
                        side[code] = side.get(code, 0) + 1
                n += 1

        side_thread = threading.Thread(target=mails_and_exports, daemon=True)
        side_thread.start()
        while time.monotonic() - started < MINUTES * 60:
            now = time.monotonic()
            if now >= next_kill:
                victim = kids[f"worker-{kills % 2 + 1}"]
                victim.kill()
                kids["scheduler"].kill()
                killed_at.append(time.time())
                victim.start()
                kids["scheduler"].start()
                kills += 1
                next_kill += KILL_EVERY * 60
                print(f"  killed {victim.role} and the scheduler (kill {kills})", flush=True)
            if now >= next_sample:
                minute = round((now - started) / 60, 1)
                pids = {"web-master": kids["web"].pid}
                for i, pid in enumerate(children_of(kids["web"].pid)):
                    pids[f"web-{i + 1}"] = pid
                for role in ("worker-1", "worker-2", "scheduler"):
                    pids[role] = kids[role].pid
                rec: dict[str, Any] = {"minute": minute}
                rec["rss_mib"] = {role: rss_mib(pid) for role, pid in pids.items()}
                rec["fds"] = {role: len(fds(pid)) for role, pid in pids.items()}
                rec["db_connections"] = database.connections(pids)
                info = r.info("memory")
                rec["redis_used_mib"] = round(info["used_memory"] / 2**20, 2)
                rec["redis_keys"] = r.dbsize()
                rec["tables"] = database.tables()
                web = load.take_latencies()
                rec["web_requests"] = len(web)
                rec["web_p95_ms"] = round(p95(web) * 1000, 1) if web else None
                # Only the resumes since the last sample (and a margin): reading
                # every resume since the start each minute grew with the log.
                resumed = database.resumed_after_payment(looked_since)
                looked_since = datetime.now(UTC) - timedelta(minutes=2)
                lat = [
                    (at - paid_at[o]).total_seconds()
                    for o, at in resumed.items()
                    if o in paid_at and o not in measured
                ]
                measured.update(o for o in resumed if o in paid_at)
                rec["resumes"] = len(lat)
                rec["event_to_resume_p95_ms"] = round(p95(lat) * 1000, 1) if lat else None
                rec["statuses"] = dict(load.statuses)
                samples.append(rec)
                fresh = {
                    role
                    for role in ("worker-1", "worker-2", "scheduler")
                    if now - kids[role].started < SAMPLE_S / 3
                }
                for group in ("rss_mib", "fds", "db_connections"):
                    for role, v in rec[group].items():
                        if role in fresh:  # just started again: not a level
                            continue
                        series.setdefault(f"{group} {role}", []).append((minute, float(v)))
                series.setdefault("redis_used_mib", []).append((minute, rec["redis_used_mib"]))
                for name in ("rows soak-order pending", "rows mail_outbox pending"):
                    if name in rec["tables"]:
                        series.setdefault(name, []).append((minute, rec["tables"][name]))
                print(
                    f"min {minute:5.1f} rss {rec['rss_mib']} fds {rec['fds']} "
                    f"db {rec['db_connections']} redis {rec['redis_used_mib']} MiB "
                    f"web p95 {rec['web_p95_ms']} ms ({len(web)} req) "
                    f"event->resume p95 {rec['event_to_resume_p95_ms']} ms ({len(lat)}) "
                    f"tables {rec['tables']}",
                    flush=True,
                )
                next_sample += SAMPLE_S
            time.sleep(0.2)

        load.stop.set()
        for t in clients:
            t.join(40)
        pub_thread.join(60)
        drained_by = time.monotonic() + DRAIN_S
        while time.monotonic() < drained_by:
            runs = database.runs()
            if runs.get("completed", 0) >= len(placed) and sum(runs.values()) == runs.get(
                "completed", 0
            ):
                break
            time.sleep(2)
        drain_s = round(time.monotonic() - (drained_by - DRAIN_S), 1)
        runs = database.runs()
        per_order = database.per_order()
        lost = sorted(set(placed) - set(per_order))
        doubled = sorted(o for o, n in per_order.items() if n > 1)
        open_runs = sum(n for s, n in runs.items() if s != "completed")
        mails: dict[str, int] = {}
        sent_at: dict[str, list[float]] = {}  # the file backend names files by send time
        for eml in (tmp / "instance" / "mail").glob("*.eml"):
            for line in eml.read_text(errors="replace").splitlines():
                if line.startswith("Subject: soak order "):
                    mails[line] = mails.get(line, 0) + 1
                    sent_at.setdefault(line, []).append(int(eml.name.split("-")[0]) / 1e9)
        # A workflow's send_mail step is at least once: a worker killed between
        # the send and the step's commit sends again. Each mail sent twice is
        # shown with the seconds from the kill before its first send.
        twice = [
            {
                "order": subject.removeprefix("Subject: soak order "),
                "sends_apart_s": round(max(times) - min(times), 2),
                "after_kill_s": min(
                    (round(min(times) - k, 2) for k in killed_at if k <= min(times) + 1),
                    default=None,
                    key=lambda d: abs(d),
                ),
            }
            for subject, times in sent_at.items()
            if len(times) > 1
        ]
        warmup = MINUTES / 6
        verdicts = judge(series, warmup)
        growth = {}
        if len(samples) >= 2:
            first, last = samples[0], samples[-1]
            span_h = (last["minute"] - first["minute"]) / 60 or 1
            for k, v in last["tables"].items():
                growth[k] = round((v - first["tables"].get(k, 0)) / span_h, 1)
        growing = [k for k, v in verdicts.items() if v["verdict"] == "GROWS"]
        result = {
            "backend": "postgresql" if db_url.startswith("postgres") else "sqlite",
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "minutes": MINUTES,
            "machine": {"cpus": os.cpu_count(), "load_average_at_end": os.getloadavg()},
            "load": {
                "profile_capacity_rps": round(cap, 1),
                "web_rps": round(rps, 1),
                "clients": CLIENTS,
                "triggers_per_s": TRIGGERS_PER_S,
                "kill_every_minutes": KILL_EVERY,
                "kills": kills,
                "side_requests": side,
            },
            "samples": samples,
            "slopes": verdicts,
            "table_growth_per_hour": growth,
            "runs": {
                "triggered": len(placed),
                "by_status": runs,
                "lost": len(lost),
                "doubled": len(doubled),
                "open": open_runs,
                "drain_seconds": drain_s,
            },
            "mails": {
                "orders_with_mail": len(mails),
                "sent_twice": sum(1 for n in mails.values() if n > 1),
                "twice": twice,
            },
            "failed": bool(lost or doubled or open_runs or growing),
            "growing": growing,
        }
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=2, default=str) + "\n")
        print(json.dumps({k: result[k] for k in ("runs", "mails", "growing", "failed")}))
        for name, v in verdicts.items():
            print(f"  {name:<40} {v}")
        print(f"wrote {OUT}")
        if result["failed"]:
            keep = Path(tempfile.mkdtemp(prefix="soak-logs-"))
            for log in tmp.glob("*.log"):
                (keep / log.name).write_bytes(log.read_bytes())
            print(
                f"SOAK FAILED: lost {lost[:5]} doubled {doubled[:5]} open {open_runs} "
                f"growing {growing}; logs in {keep}"
            )
            return 1
        print("soak passed")
        return 0


if __name__ == "__main__":
    sys.exit(main())
