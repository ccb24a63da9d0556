"""Web benchmark: `python -m bench.web` (or `make bench`).

Starts the app in gunicorn as production does (Procfile: 2 workers x 4 threads,
gthread) against a temporary SQLite database (or BENCH_DATABASE_URL) and an
embedded Redis (or BENCH_REDIS_URL), registers and signs in a user over HTTP,
then loads three routes of the same server with BENCH_THREADS client threads
(keep-alive `requests.Session`, one signed-in session each) for BENCH_SECONDS
each:

- `GET /healthz`: the trivial route (one `SELECT 1`), the baseline;
- `GET /profile` signed in: the whole profile page;
- `POST /profile/password` as htmx with mismatched new passwords: 422 and the
  section fragment, refused before the rate limiter and the hash (the cost of a
  failing htmx POST without argon2);
- `POST /profile/email` as htmx with a wrong current password: 422 and the
  section fragment. It verifies the password with argon2id at the production
  parameters (the default config, or ARGON2_* from the environment), so its cost
  is mostly that hash.

It reports requests/s and p50/p99 latency, ratios against the trivial route,
and the bytes of the htmx fragment vs the full page; writes
`bench/results/web.json` (one entry per database backend).

The account rate limits are raised to 10^6 per minute in the bench's app (the
per-user limit of 5 password checks per minute would otherwise answer 429 after
five requests); their storage is still Redis, so each request still pays the
limiter's round trip.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from bench.common import services

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "web.json"
THREADS = int(os.environ.get("BENCH_THREADS", "8"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
WARMUP = float(os.environ.get("BENCH_WARMUP", "1"))
GUNICORN_WORKERS = 2
GUNICORN_THREADS = 4
PASSWORD = "correct horse battery staple"
WRONG = "not the password, clearly"
BENCH_LIMIT = "1000000 per minute"


def bench_app() -> Any:
    """The gunicorn entry point (`bench.web:bench_app()`): the production app,
    with rate limits that do not throttle the load."""
    from webapp import create_app
    from webapp.accounts import ratelimit

    for name in ratelimit.LIMITS:
        ratelimit.LIMITS[name] = BENCH_LIMIT
    return create_app()


# -- the server -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gunicorn(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        str(GUNICORN_WORKERS),
        "--threads",
        str(GUNICORN_THREADS),
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        "bench.web:bench_app()",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{log.read_text()[-3000:]}")
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc
        except requests.RequestException:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"gunicorn did not answer /healthz:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the client -------------------------------------------------------------------

CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    if not match:
        raise RuntimeError("page has no csrf-token meta tag")
    return match.group(1)


def register(base: str, address: str) -> None:
    s = requests.Session()
    token = csrf_of(s.get(f"{base}/register").text)
    r = s.post(
        f"{base}/register",
        data={"email": address, "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token},
    )
    if r.status_code != 200 or "We have sent a message to" not in r.text:
        raise RuntimeError(f"registration failed: {r.status_code}")


@dataclass
class Client:
    session: requests.Session
    csrf: str  # from the signed-in profile page (session-bound)


def sign_in(base: str, address: str) -> Client:
    s = requests.Session()
    token = csrf_of(s.get(f"{base}/login").text)
    r = s.post(
        f"{base}/login",
        data={"email": address, "password": PASSWORD, "csrf_token": token},
        allow_redirects=False,
    )
    if r.status_code != 302:
        raise RuntimeError(f"sign-in failed: {r.status_code}")
    page = s.get(f"{base}/profile")
    if page.status_code != 200 or f"{address}</strong>" not in page.text:
        raise RuntimeError("signed-in profile page not served")
    return Client(s, csrf_of(page.text))


def email_post(base: str, c: Client, htmx: bool = True) -> requests.Response:
    headers = {"X-CSRFToken": c.csrf}
    if htmx:
        headers["HX-Request"] = "true"
    return c.session.post(
        f"{base}/profile/email",
        data={"new_email": "someone.else@example.com", "current_password": WRONG},
        headers=headers,
    )


def mismatch_post(base: str, c: Client) -> requests.Response:
    """A failing htmx POST that stops before the limiter and the hash: the cost of
    CSRF, session, the command's first check and the fragment, without argon2."""
    return c.session.post(
        f"{base}/profile/password",
        data={"current_password": WRONG, "new_password": PASSWORD, "confirm_password": WRONG},
        headers={"X-CSRFToken": c.csrf, "HX-Request": "true"},
    )


@dataclass
class Route:
    name: str
    call: Callable[[Client], requests.Response]
    expect_status: int
    expect_text: str


@dataclass
class Figures:
    requests: int
    seconds: float
    latencies_ms: list[float] = field(repr=False)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def pct(self, p: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def load(route: Route, clients: list[Client], seconds: float) -> Figures:
    """Every client in its own thread, back to back, for `seconds`. Any answer
    other than the expected one aborts the bench (a fast wrong answer is no figure)."""
    latencies: list[list[float]] = [[] for _ in clients]
    failures: list[str] = []
    deadline = time.perf_counter() + seconds

    def worker(i: int) -> None:
        c = clients[i]
        while time.perf_counter() < deadline and not failures:
            t0 = time.perf_counter()
            r = route.call(c)
            elapsed = time.perf_counter() - t0
            if r.status_code != route.expect_status or route.expect_text not in r.text:
                failures.append(f"{route.name}: {r.status_code} {r.text[:200]!r}")
                return
            latencies[i].append(elapsed * 1000)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(clients))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"unexpected answer: {failures[0]}")
    flat = [x for per in latencies for x in per]
    return Figures(len(flat), took, flat)


def argon2_verify_ms(time_cost: int, memory_cost: int, parallelism: int) -> float:
    """One failing verify at the server's parameters, here in this process (median of 5)."""
    from webapp.accounts import passwords

    ph = passwords.hasher(time_cost, memory_cost, parallelism)
    stored = ph.hash(PASSWORD)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        passwords.verify_password(ph, stored, WRONG)
        runs.append((time.perf_counter() - t0) * 1000)
    return statistics.median(runs)


# -- the run ----------------------------------------------------------------------


def main() -> dict[str, Any]:
    from webapp.config import Config

    load_at_start = os.getloadavg()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-web-")))
        db_url, redis_url = services(stack, tmp, reset=False)
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "INSTANCE_PATH": str(tmp / "instance"),
            "SECRET_KEY": secrets.token_urlsafe(32),
            "LOG_LEVEL": "WARNING",
            "MAIL_BACKEND": "file",
        }
        cfg = Config.from_env(env)  # what the server reads: the argon2 parameters it uses
        port = free_port()
        server = start_gunicorn(env, port, tmp / "gunicorn.log")
        stack.callback(stop, server)
        base = f"http://127.0.0.1:{port}"

        address = f"bench-{secrets.token_hex(4)}@example.com"
        register(base, address)
        t0 = time.perf_counter()
        clients = [sign_in(base, address) for _ in range(THREADS)]
        sign_in_ms = (time.perf_counter() - t0) * 1000 / THREADS

        routes = [
            Route("GET /healthz", lambda c: c.session.get(f"{base}/healthz"), 200, '"ok"'),
            Route(
                "GET /profile",
                lambda c: c.session.get(f"{base}/profile"),
                200,
                f"{address}</strong>",
            ),
            Route(
                "POST /profile/password (htmx, mismatch)",
                lambda c: mismatch_post(base, c),
                422,
                "The new passwords do not match.",
            ),
            Route(
                "POST /profile/email (htmx, wrong password)",
                lambda c: email_post(base, c),
                422,
                "The current password is not correct.",
            ),
        ]
        measured: dict[str, Figures] = {}
        for route in routes:
            load(route, clients, WARMUP)
            measured[route.name] = load(route, clients, SECONDS)

        # Bytes: the same failing POST as htmx (fragment) and as a plain form post
        # (whole page with the banner), and the whole page on GET.
        c = clients[0]
        fragment = email_post(base, c).content
        full_post = email_post(base, c, htmx=False).content
        full_get = c.session.get(f"{base}/profile").content
        if b"<html" in fragment or b"<html" not in full_post:
            raise RuntimeError("fragment/page renderings are not what they should be")
        argon2_ms = argon2_verify_ms(
            cfg.argon2_time_cost, cfg.argon2_memory_cost, cfg.argon2_parallelism
        )

    base_fig = measured["GET /healthz"]
    routes_out = {}
    for name, fig in measured.items():
        routes_out[name] = {
            "requests": fig.requests,
            "seconds": round(fig.seconds, 2),
            "rps": round(fig.rps, 1),
            "p50_ms": round(fig.pct(50), 2),
            "p99_ms": round(fig.pct(99), 2),
            "rps_vs_healthz": round(fig.rps / base_fig.rps, 3),
            "p50_vs_healthz": round(fig.pct(50) / base_fig.pct(50), 2),
        }

    def sizes(body: bytes) -> dict[str, int]:
        return {"bytes": len(body), "gzip_bytes": len(gzip.compress(body, 6))}

    return {
        "backend": "postgresql" if db_url.startswith("postgresql") else "sqlite",
        "redis": "external" if os.environ.get("BENCH_REDIS_URL") else "embedded",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in load_at_start],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "server": {
            "gunicorn_workers": GUNICORN_WORKERS,
            "gunicorn_threads": GUNICORN_THREADS,
            "worker_class": "gthread",
            "rate_limits": f"raised to {BENCH_LIMIT} (Redis storage kept)",
        },
        "load": {"client_threads": THREADS, "seconds_per_route": SECONDS, "warmup_s": WARMUP},
        "argon2id": {
            "time_cost": cfg.argon2_time_cost,
            "memory_cost_kib": cfg.argon2_memory_cost,
            "parallelism": cfg.argon2_parallelism,
            "verify_ms_single_in_bench_process": round(argon2_ms, 1),
            "sign_in_ms_sequential": round(sign_in_ms, 1),
        },
        "routes": routes_out,
        "bytes": {
            "htmx_fragment_email_422": sizes(fragment),
            "full_page_email_422": sizes(full_post),
            "full_page_get_profile": sizes(full_get),
            "fragment_vs_full_page": round(len(fragment) / len(full_post), 3),
        },
    }


def print_table(r: dict[str, Any]) -> None:
    a = r["argon2id"]
    print(
        f"\nweb bench: {r['backend']} + {r['redis']} Redis, gunicorn "
        f"{r['server']['gunicorn_workers']} workers x {r['server']['gunicorn_threads']} threads, "
        f"{r['load']['client_threads']} client threads x {r['load']['seconds_per_route']} s per route"
    )
    print(
        f"argon2id t={a['time_cost']} m={a['memory_cost_kib']} KiB p={a['parallelism']} "
        f"(production parameters; one verify here: {a['verify_ms_single_in_bench_process']} ms)"
    )
    print(f"rate limits: {r['server']['rate_limits']}")
    cpus, avg = r["machine"]["cpus"], r["machine"]["load_average_at_start"]
    print(f"machine: {cpus} CPUs shared by client and server, load average at start {avg}\n")
    head = f"{'route':<42} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'req/s ratio':>12} {'p50 ratio':>10}"
    print(head)
    print("-" * len(head))
    for name, f in r["routes"].items():
        print(
            f"{name:<42} {f['rps']:>8.1f} {f['p50_ms']:>8.2f} {f['p99_ms']:>8.2f} "
            f"{f['rps_vs_healthz']:>12.3f} {f['p50_vs_healthz']:>10.2f}"
        )
    b = r["bytes"]
    print("\nbytes (raw / gzip)")
    for key in ("htmx_fragment_email_422", "full_page_email_422", "full_page_get_profile"):
        print(f"  {key:<26} {b[key]['bytes']:>7} / {b[key]['gzip_bytes']:>6}")
    print(f"  fragment / full page      {b['fragment_vs_full_page']:.3f}")


def write(r: dict[str, Any]) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data[r["backend"]] = r
    RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"\nwrote {RESULTS.relative_to(ROOT)} [{r['backend']}]")


if __name__ == "__main__":
    result = main()
    print_table(result)
    write(result)
