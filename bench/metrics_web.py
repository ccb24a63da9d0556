"""What the request instruments cost: `python -m bench.metrics_web` (in `make bench`).

Serves the production app three times, as bench/web.py does (gunicorn, 2 workers x 4
threads, one database and Redis), once as deployed (`METRICS_ENABLED=true`: every
request timed and counted into the multiprocess directory) and twice with
`METRICS_ENABLED=false`, and drives `GET /profile` (the full page, signed in)
on each with wrk, BENCH_ROUNDS (5) rounds. In each round both servers are
loaded at the same time, one wrk each: on this shared machine the other jobs'
load changes within seconds, and so hits both alike, while the two servers
split the CPUs, so the one that costs more per request serves fewer. Each
round's ratio is on/off req/s; the figure is the median round. The same run
measures a third server, also off, against the off one the same way (rounds in
turn with the real pair): the bench's own noise, to read the ratio against.
Beside it, what the instruments cost, timed in a process of their own: one
request's timing and counting (`labels(...).observe(...)` into a multiprocess
file) over 20,000 calls. Writes `bench/results/metrics_web.json`, prints it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench import wrk
from bench.common import services, write_result
from bench.servers import start_gunicorn, stop
from bench.web import Route, check, measure, signed_in

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "metrics_web.json"
ROUNDS = max(1, int(os.environ.get("BENCH_ROUNDS", "5")))
USER_AGENT = "bench-web/1"  # the sign-in's, as bench/web.py sends it


def profile(base: str, cookie: str, address: str) -> Route:
    headers = {"Cookie": cookie, "User-Agent": USER_AGENT}
    return Route("GET /profile", wrk.Request(f"{base}/profile", headers=headers), 200, address)


# Run in a process of its own, counting into the bench's directory (never the
# instance's, which a `make run` may be serving).
COST = """
import time
from webapp.metrics import instruments
histogram, calls = instruments.HTTP_REQUESTS, 20_000
started = time.perf_counter()
for _ in range(calls):
    t = time.perf_counter()
    histogram.labels("GET", "/profile", "200").observe(time.perf_counter() - t)
print((time.perf_counter() - started) / calls * 1e6)
"""


def observe_cost_us(env: dict[str, str]) -> float:
    """Microseconds per request for the request instruments."""
    out = subprocess.run(
        [sys.executable, "-c", COST], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def main() -> dict[str, Any]:
    wrk.executable()
    load_at_start = os.getloadavg()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-metrics-")))
        db_url, redis_url = services(stack, tmp, reset=False)
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "INSTANCE_PATH": str(tmp / "instance"),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics"),
            "SECRET_KEY": secrets.token_urlsafe(32),  # one key: one session cookie for both
            "LOG_LEVEL": "WARNING",
        }
        (tmp / "metrics").mkdir()
        apps: dict[str, str] = {}
        for name, enabled in (("on", "true"), ("off", "false"), ("off2", "false")):
            proc, base = start_gunicorn(
                "bench.web:bench_app()",
                "/healthz",
                {**env, "METRICS_ENABLED": enabled},
                tmp / f"{name}.log",
            )
            stack.callback(stop, proc)
            apps[name] = base
        address = f"bench-{secrets.token_hex(4)}@example.com"
        cookie, _csrf = signed_in(apps["on"], address)
        route = {name: profile(base, cookie, address) for name, base in apps.items()}  # one user
        for r in route.values():
            check(r)
        cost_us = observe_cost_us(env)
        runs: list[dict[str, wrk.Figures]] = []
        calibration: list[dict[str, wrk.Figures]] = []
        with ThreadPoolExecutor(2) as pool:

            def pair(a: str, b: str) -> dict[str, wrk.Figures]:
                futures = {name: pool.submit(measure, route[name]) for name in (a, b)}
                return {name: f.result() for name, f in futures.items()}

            for _ in range(ROUNDS):  # both at once: whatever else loads the machine loads both
                runs.append(pair("on", "off"))
                calibration.append(pair("off2", "off"))

    ratios = [r["on"].rps / r["off"].rps for r in runs]
    middle = sorted(range(len(runs)), key=lambda i: ratios[i])[len(runs) // 2]
    same = sorted(r["off2"].rps / r["off"].rps for r in calibration)

    def figures(f: wrk.Figures) -> dict[str, float]:
        return {"rps": round(f.rps, 1), "p50_ms": round(f.p50_ms, 2), "p99_ms": round(f.p99_ms, 2)}

    return {
        "backend": "postgresql" if db_url.startswith("postgresql") else "sqlite",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in load_at_start],
        },
        "load": {"client": "wrk", "rounds": ROUNDS, **wrk.settings()},
        "route": "GET /profile (full page, signed in)",
        "ratio_on_to_off": round(ratios[middle], 3),
        "ratio_each_round": [round(x, 3) for x in ratios],
        # Two identical servers (both off) measured the same way: the bench's own noise.
        "calibration_off_to_off": round(same[len(same) // 2], 3),
        "calibration_each_round": [round(x, 3) for x in same],
        "instrument_cost_us_per_request": round(cost_us, 2),
        "median_round": {name: figures(f) for name, f in runs[middle].items()},
    }


if __name__ == "__main__":
    try:
        result = main()
    except wrk.WrkMissing as exc:
        raise SystemExit(str(exc)) from None
    m = result["median_round"]
    print(
        f"\n/metrics on vs off, {result['route']}, {result['backend']}; load average at start "
        f"{result['machine']['load_average_at_start']} on {result['machine']['cpus']} CPUs"
    )
    print(
        f"  on : {m['on']['rps']:>8.1f} req/s  p50 {m['on']['p50_ms']} ms  p99 {m['on']['p99_ms']} ms"
    )
    print(
        f"  off: {m['off']['rps']:>8.1f} req/s  p50 {m['off']['p50_ms']} ms  p99 {m['off']['p99_ms']} ms"
    )
    each = " ".join(f"{x:.3f}" for x in result["ratio_each_round"])
    print(f"  on/off: {result['ratio_on_to_off']:.3f} (median round; rounds: {each})")
    cal = " ".join(f"{x:.3f}" for x in result["calibration_each_round"])
    print(
        f"  off/off (two identical servers, the noise): {result['calibration_off_to_off']:.3f} (rounds: {cal})"
    )
    print(f"  instruments per request, in-process: {result['instrument_cost_us_per_request']} us")
    write_result(RESULTS, result)
