"""Talking to runs and following them live: `python -m bench.messages`.

Real RQ workers and an rq-scheduler (as `bench.workflows` starts them), an
embedded Redis (or BENCH_REDIS_URL) and a temporary SQLite database (or
BENCH_DATABASE_URL), measured in one run against the baseline of the same
run:

- event_resume_ms: awaited event appended -> step.resumed (the baseline,
  `bench.workflows`'s figure, measured again here)
- signal_resume_ms: `wf.signal` to a run waiting in `wait_for_signal` ->
  its step.resumed, p50/p95; and its ratio to the baseline's
- update_round_trip_ms: `wf.update` called -> its answer returned, p50/p95
- emit_to_sse_ms: a step's `ctx.emit` committed -> the entry read on an open
  SSE connection (`GET /runs/<id>/events` on a gunicorn gevent worker), p95
- idle_streams: 500 open SSE connections to one gunicorn gevent worker
  process, idle: its resident memory before and with them (MiB), and its CPU
  while they stay idle (% of one core)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import webapp.workflows as wf
from bench import workflows as base
from bench.common import services, write_result

ROOT = Path(__file__).resolve().parent.parent
SIGNALS = int(os.environ.get("BENCH_SIGNALS", "60"))
UPDATES = int(os.environ.get("BENCH_UPDATES", "60"))
EMITS = int(os.environ.get("BENCH_EMITS", "60"))
STREAMS = int(os.environ.get("BENCH_STREAMS", "500"))
IDLE_SECONDS = float(os.environ.get("BENCH_IDLE_SECONDS", "10"))
TOKEN_ENV = "BENCH_STREAM_ADMIN"


def _accept(results: Any, payload: Any) -> Any:
    return payload


SIGNALLED = wf.workflow(
    "bench-signalled",
    on="bench.signalled",
    steps=[wf.wait_for_signal("go", timeout="PT10M"), wf.ret(1)],
)
UPDATED = wf.workflow(
    "bench-updated",
    on="bench.updated",
    steps=[wf.wait_for_update("set", handler=_accept, timeout="PT10M"), wf.ret(1)],
)


def _emit_slowly(ctx: Any) -> int:
    for i in range(EMITS):
        ctx.emit("tick", {"i": i, "at": time.time()})
        time.sleep(0.05)
    return EMITS


EMITTING = wf.workflow(
    "bench-emitting",
    on="bench.emitting",
    steps=[wf.wait_for_signal("go", timeout="PT10M"), wf.compute("emit", _emit_slowly), wf.ret(1)],
)
ALL = (SIGNALLED, UPDATED, EMITTING)


def register(app: Any) -> None:
    """The WORKFLOW_MODULES hook (with `bench.workflows`'s own)."""
    for flow in ALL:
        wf.register(flow)


def _run_ids(b: base.Bench, name: str) -> list[str]:
    from sqlalchemy import select

    from webapp.core import db
    from webapp.workflows.store.tables import workflow_runs

    with db.reading() as conn:
        q = select(workflow_runs.c.run_id).where(workflow_runs.c.workflow_name == name)
        return [r.run_id for r in conn.execute(q)]


def signal_resume_ms(b: base.Bench) -> list[float]:
    b.emit("bench.signalled", [{"i": i} for i in range(SIGNALS)])
    b.until(lambda: b.count(SIGNALLED.name, "suspended") >= SIGNALS)
    sent: dict[str, datetime] = {}
    for rid in _run_ids(b, SIGNALLED.name):
        sent[rid] = datetime.now(UTC)
        wf.signal(rid, "go")
        time.sleep(0.05)
    b.until(lambda: b.count(SIGNALLED.name, "completed") >= SIGNALS)
    resumed = b._resumed_at(SIGNALLED.name)
    return [(resumed[r] - sent[r]).total_seconds() * 1000 for r in sent if r in resumed]


def update_round_trip_ms(b: base.Bench) -> list[float]:
    b.emit("bench.updated", [{"i": i} for i in range(UPDATES)])
    b.until(lambda: b.count(UPDATED.name, "suspended") >= UPDATES)
    out = []
    for rid in _run_ids(b, UPDATED.name):
        t0 = time.perf_counter()
        answer = wf.update(rid, "set", {"v": 1}, timeout=30)
        out.append((time.perf_counter() - t0) * 1000)
        assert answer.accepted, answer
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _web(b: base.Bench, port: int) -> subprocess.Popen[bytes]:
    """One gunicorn gevent worker: the server setup docs/operations.md names for SSE."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-k",
            "gevent",
            "--workers",
            "1",
            "--worker-connections",
            str(STREAMS + 100),
            "--bind",
            f"127.0.0.1:{port}",
            "wsgi:app",
        ],
        cwd=ROOT,
        env={
            **b.env,
            "WORKFLOW_STREAMS_MAX": str(STREAMS + 10),
            # the bench's one sign-in need not cost a production password hash
            "ARGON2_TIME_COST": "2",
            "ARGON2_MEMORY_COST": "19456",
            "ARGON2_PARALLELISM": "1",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _session_cookie(b: base.Bench, port: int) -> str:
    """Sign an admin in over HTTP (registered and granted here): its cookie."""
    import re

    import httpx

    from tests.support.accounts import PASSWORD, make_admin

    address = "bench-admin@example.com"
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}", follow_redirects=False, timeout=120
    ) as c:

        def post(path: str, **data: str) -> Any:
            page = c.get(path).text
            found = re.search(r'name="csrf-token" content="([^"]+)"', page)
            assert found, path
            return c.post(path, data={"csrf_token": found.group(1), **data})

        post("/register", email=address, password=PASSWORD, confirm=PASSWORD)
        make_admin(address)
        r = post("/login", email=address, password=PASSWORD)
        assert r.status_code == 302, r.status_code
        return "; ".join(f"{k}={v}" for k, v in c.cookies.items())


def _until_up(port: int) -> None:
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise TimeoutError("gunicorn did not start")


def emit_to_sse_ms(b: base.Bench, port: int, cookie: str) -> list[float]:
    import httpx

    b.emit("bench.emitting", [{}])
    b.until(lambda: b.count(EMITTING.name, "suspended") >= 1)
    (rid,) = _run_ids(b, EMITTING.name)
    out: list[float] = []
    url = f"http://127.0.0.1:{port}/runs/{rid}/events"
    with httpx.stream("GET", url, headers={"Cookie": cookie}, timeout=60) as r:
        assert r.status_code == 200, r.status_code
        threading.Timer(0.5, lambda: wf.signal(rid, "go")).start()
        import json
        import re

        for line in r.iter_lines():
            if line.startswith("data: <li"):
                now = time.time()
                found = re.search(r"\{.*\}", line)
                if found:
                    at = json.loads(found.group(0).replace("&#34;", '"'))["at"]
                    out.append((now - at) * 1000)
            if line == "event: done":
                break
    return out


def idle_streams(
    b: base.Bench, web: subprocess.Popen[bytes], port: int, cookie: str
) -> dict[str, float]:
    """Open STREAMS SSE connections to one waiting run; the web process's
    memory before and with them, and its CPU while they idle."""
    import psutil

    b.emit("bench.signalled", [{"i": -1}])
    b.until(lambda: b.count(SIGNALLED.name, "suspended") >= 1)
    rid = next(r for r in _run_ids(b, SIGNALLED.name) if b.count(SIGNALLED.name, "suspended"))
    children = psutil.Process(web.pid).children()
    proc = children[0] if children else psutil.Process(web.pid)
    rss_before = proc.memory_info().rss
    socks = []
    request = (
        f"GET /runs/{rid}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    for _ in range(STREAMS):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(request)
        socks.append(s)
    for s in socks:  # every stream answered (its first bytes arrived)
        s.settimeout(30)
        assert s.recv(64).startswith(b"HTTP/1.1 200"), "a stream was refused"
    time.sleep(2)
    rss_with = proc.memory_info().rss
    cpu0 = sum(proc.cpu_times()[:2])
    time.sleep(IDLE_SECONDS)
    cpu = 100 * (sum(proc.cpu_times()[:2]) - cpu0) / IDLE_SECONDS
    threads = proc.num_threads()
    for s in socks:
        s.close()
    return {
        "streams": STREAMS,
        "rss_before_mib": round(rss_before / 2**20, 1),
        "rss_with_mib": round(rss_with / 2**20, 1),
        "per_stream_kib": round((rss_with - rss_before) / STREAMS / 1024, 1),
        "idle_cpu_pct": round(cpu, 2),
        "threads": threads,
    }


def main() -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-messages-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        b = base.Bench(db_url, redis_url, tmp / "instance", "bench.workflows,bench.messages")
        register(None)
        b.start()
        stack.callback(b.stop)
        time.sleep(2)
        baseline = base.Bench.event_resume_ms(b)
        print("event -> resume p50/p95 ms", base.pct(baseline, 50), base.pct(baseline, 95))
        signal = signal_resume_ms(b)
        print("signal -> resume p50/p95 ms", base.pct(signal, 50), base.pct(signal, 95))
        updates = update_round_trip_ms(b)
        print("update round trip p50/p95 ms", base.pct(updates, 50), base.pct(updates, 95))
        port = _free_port()
        web = _web(b, port)
        stack.callback(web.terminate)
        _until_up(port)
        cookie = _session_cookie(b, port)
        sse = emit_to_sse_ms(b, port, cookie)
        idle = idle_streams(b, web, port, cookie)
        p = base.pct
        result = {
            "backend": "postgresql" if db_url.startswith("postgres") else "sqlite",
            "workers": base.WORKERS,
            "cpus": os.cpu_count(),
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "event_resume_ms": {"p50": p(baseline, 50), "p95": p(baseline, 95), "n": len(baseline)},
            "signal_resume_ms": {"p50": p(signal, 50), "p95": p(signal, 95), "n": len(signal)},
            "signal_to_event_resume_p95_ratio": round(p(signal, 95) / p(baseline, 95), 2),
            "update_round_trip_ms": {
                "p50": p(updates, 50),
                "p95": p(updates, 95),
                "n": len(updates),
            },
            "emit_to_sse_ms": {"p50": p(sse, 50), "p95": p(sse, 95), "n": len(sse)},
            "idle_streams": idle,
        }
    write_result(ROOT / "bench" / "results" / "messages.json", result)
    for k, v in result.items():
        print(f"{k:<34} {v}")
    return result


if __name__ == "__main__":
    main()
