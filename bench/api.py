"""API benchmark: `python -m bench.api`.

`POST /api/v1/events` per second, one event per request, against `publish()`
called in-process in the same run: the ratio is what the HTTP API costs over
the function it calls (request parsing, token lookup, rate limit, validation,
the JSON answer, and the HTTP round trip).

- the API: the production app under gunicorn with the Procfile's settings (2
  workers x 4 threads), driven by wrk for BENCH_SECONDS over keep-alive
  connections, each request a new event on a stream of its own (a Lua
  `request` function writes each body); every answer must be 201. Twice: one
  connection (one request after the other: the cost of a call, as the
  baseline makes them) and BENCH_WRK_CONNECTIONS (8) connections (what the
  server takes from many clients);
- the baseline: `publish()` in this process, one call after the other, for the
  same time, on the same database (the server is idle meanwhile).

Each is measured BENCH_ROUNDS (3) times, alternating, and the median ratio is
reported. The token's rate limit is raised so it does not throttle the load;
its storage stays Redis, so every request still counts in it. SQLite by default,
BENCH_DATABASE_URL for PostgreSQL. Writes `bench/results/api.json`.
"""

from __future__ import annotations

import os
import platform
import secrets
import statistics
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import requests

from bench import wrk
from bench.common import services, write_result
from bench.servers import GUNICORN_THREADS, GUNICORN_WORKERS, start_gunicorn, stop

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "api.json"
ROUNDS = max(1, int(os.environ.get("BENCH_ROUNDS", "3")))

# Each request a new event: a stream of its own per thread and request.
BODY_LUA = """
counter = 0
seed = tostring({}):sub(8)
request = function()
  counter = counter + 1
  local body = string.format(
    '{"type":"bench.ping","aggregateType":"bench","aggregateId":"%s-%d","payload":{"n":%d}}',
    seed, counter, counter)
  return wrk.format(nil, nil, nil, body)
end
"""


def in_process(env: dict[str, str], seconds: float) -> float:
    """publish() calls per second in this process, on the server's database."""
    from webapp import create_app
    from webapp.core.config import Config
    from webapp.publish import publish

    app = create_app(Config.from_env(env))
    with app.app_context():
        for i in range(20):  # warm: connections, statements
            publish("bench.ping", "bench", f"warm-{i}", {"n": i})
        n, start = 0, time.perf_counter()
        run = uuid.uuid4().hex[:8]
        while (elapsed := time.perf_counter() - start) < seconds:
            publish("bench.ping", "bench", f"{run}-{n}", {"n": n})
            n += 1
    return n / elapsed


def make_token(env: dict[str, str]) -> str:
    from webapp import create_app
    from webapp.api import tokens
    from webapp.core import db
    from webapp.core.config import Config

    app = create_app(Config.from_env(env))
    with app.app_context(), db.transaction() as conn:
        _, secret = tokens.create(conn, "bench", ["events:write"], "default", "bench")
    return secret


def main() -> dict[str, Any]:
    wrk.executable()
    load_at_start = os.getloadavg()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-api-")))
        db_url, redis_url = services(stack, tmp, reset=False)
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "INSTANCE_PATH": str(tmp / "instance"),
            "SECRET_KEY": secrets.token_urlsafe(32),
            "LOG_LEVEL": "WARNING",
            "API_RATE_LIMIT": "1000000000 per minute",
        }
        secret = make_token(env)
        app, base = start_gunicorn("wsgi:app", "/healthz", env, tmp / "app.log")
        stack.callback(stop, app)
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        probe = requests.post(
            f"{base}/api/v1/events",
            json={"type": "bench.ping", "aggregateType": "bench", "aggregateId": "probe"},
            headers=headers,
            timeout=10,
        )
        if probe.status_code != 201:
            raise RuntimeError(f"POST /api/v1/events: {probe.status_code} {probe.text[:300]}")
        req = wrk.Request(f"{base}/api/v1/events", "POST", headers, lua=BODY_LUA)
        wrk.run(req, wrk.WARMUP)
        rounds: dict[int, list[tuple[wrk.Figures, float]]] = {1: [], wrk.CONNECTIONS: []}
        for _ in range(ROUNDS):
            for connections in rounds:
                fig = wrk.run(req, threads=min(wrk.THREADS, connections), connections=connections)
                if fig.status_errors or fig.socket_errors:
                    raise RuntimeError(
                        f"{fig.status_errors} error answers, {fig.socket_errors} socket errors"
                    )
                rounds[connections].append((fig, in_process(env, wrk.SECONDS)))
    backend = "postgresql" if db_url.startswith("postgres") else "sqlite"
    result: dict[str, Any] = {
        "backend": backend,
        "python": platform.python_version(),
        "gunicorn": {"workers": GUNICORN_WORKERS, "threads": GUNICORN_THREADS},
        **wrk.settings(),
        "rounds": ROUNDS,
        "load_at_start": [round(x, 2) for x in load_at_start],
    }
    print()
    for connections, runs in rounds.items():
        ratios = [fig.rps / base for fig, base in runs]
        middle = sorted(range(len(runs)), key=lambda i: ratios[i])[len(runs) // 2]
        fig, base = runs[middle]
        result[f"connections_{connections}"] = {
            "api_events_per_s": round(fig.rps, 1),
            "api_p50_ms": fig.p50_ms,
            "api_p99_ms": fig.p99_ms,
            "publish_in_process_per_s": round(base, 1),
            "ratio_api_to_publish": round(ratios[middle], 3),
            "ratios": [round(r, 3) for r in ratios],
            "ratio_spread": round(statistics.pstdev(ratios), 3),
        }
        print(
            f"{backend}, {connections} connection(s): POST /api/v1/events {fig.rps:,.0f}/s "
            f"(p50 {fig.p50_ms:.1f} ms, p99 {fig.p99_ms:.1f} ms) vs publish() in-process "
            f"{base:,.0f}/s: ratio {ratios[middle]:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})"
        )
    write_result(RESULTS, result)
    return result


if __name__ == "__main__":
    main()
