"""Web benchmark: `python -m bench.web` (or `make bench`).

Serves two apps with the Procfile's gunicorn settings (2 workers x 4 threads,
gthread): the production app (`bench.web:bench_app()`, against a temporary
SQLite database or BENCH_DATABASE_URL, and an embedded Redis or BENCH_REDIS_URL)
and a bare Flask "hello world" (`bench/hello.py`), the floor. wrk drives each
route for BENCH_SECONDS (5) after BENCH_WARMUP (1) with BENCH_WRK_THREADS (2)
threads and BENCH_WRK_CONNECTIONS (8) keep-alive connections, one route after
the other, with hello measured before the first route and after every route:
each route's ratio is its req/s over the mean of the hello runs just before and
just after it (on a shared machine the load changes within a minute; the
neighbouring runs see the same load). All routes are measured BENCH_ROUNDS (3)
times, round after round, and each route reports its round with the median
ratio (its req/s, p50 and p99), plus every round's ratio: a neighbour's burst
moves one round, not the figure.

Routes (signed-in ones carry the session cookie of a user registered and signed
in over HTTP; every route's answer is checked once before the load, and wrk's
status count must match the expected status for every request):

- `GET /healthz` (as deployed: a `SELECT 1` at most once a second per worker,
  `HEALTHZ_CACHE_MS`);
- `GET /profile`, the whole page, and with `HX-Request` (the htmx request);
- `GET /privacy`, when this build has the route (else skipped, with a note);
- `POST /profile/email` as htmx with a valid CSRF token and no current password:
  422 with the section fragment, stopped before the password check (no argon2);
- `GET /login`, the sign-in page (signed out: a fresh session and CSRF token).

Plus the resident memory of each gunicorn worker after the load. Writes
`bench/results/web.json` (one entry per database backend) and prints the table.
BENCH_ROUTES=profile,healthz measures only the routes whose name contains one of
those words (for trying a change; such a partial run is printed, not written).
The account rate limits are raised to 10^6 per minute in the bench's app only;
their storage stays Redis.
"""

from __future__ import annotations

import os
import platform
import re
import secrets
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import requests

from bench import wrk
from bench.common import services, write_result
from bench.servers import GUNICORN_THREADS, GUNICORN_WORKERS, start_gunicorn, stop, worker_rss_mib

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "web.json"
PASSWORD = "correct horse battery staple"
BENCH_LIMIT = "1000000 per minute"
ONLY = [w for w in os.environ.get("BENCH_ROUTES", "").split(",") if w]
ROUNDS = max(1, int(os.environ.get("BENCH_ROUNDS", "3")))
HELLO = "hello world (Flask, baseline)"
# One browser: the signed-in requests carry the User-Agent the sign-in had (Flask-Login's
# session protection would otherwise mark every request's session not fresh and rewrite it).
USER_AGENT = "bench-web/1"


def bench_app() -> Any:
    """The gunicorn entry point (`bench.web:bench_app()`): the production app,
    with rate limits that do not throttle the load."""
    from webapp import create_app
    from webapp.accounts import ratelimit

    for name in ratelimit.LIMITS:
        ratelimit.LIMITS[name] = BENCH_LIMIT
    return create_app()


# -- the signed-in user -----------------------------------------------------------

CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    if not match:
        raise RuntimeError("page has no csrf-token meta tag")
    return match.group(1)


def signed_in(base: str, address: str) -> tuple[str, str]:
    """Register `address`, sign in over HTTP: (Cookie header, CSRF token)."""
    s = requests.Session()
    token = csrf_of(s.get(f"{base}/register").text)
    form = {"email": address, "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token}
    r = s.post(f"{base}/register", data=form)
    if r.status_code != 200 or "We have sent a message to" not in r.text:
        raise RuntimeError(f"registration failed: {r.status_code}")
    s = requests.Session()
    s.headers["User-Agent"] = USER_AGENT
    token = csrf_of(s.get(f"{base}/login").text)
    form = {"email": address, "password": PASSWORD, "csrf_token": token}
    r = s.post(f"{base}/login", data=form, allow_redirects=False)
    if r.status_code != 302:
        raise RuntimeError(f"sign-in failed: {r.status_code}")
    page = s.get(f"{base}/profile")
    if page.status_code != 200 or f"{address}</strong>" not in page.text:
        raise RuntimeError("signed-in profile page not served")
    cookie = "; ".join(f"{c.name}={c.value}" for c in s.cookies)
    return cookie, csrf_of(page.text)


# -- the routes -------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    name: str
    request: wrk.Request
    status: int
    text: str


def routes(base: str, cookie: str, csrf: str, address: str) -> list[Route]:
    me = {"Cookie": cookie, "User-Agent": USER_AGENT}
    htmx = {**me, "HX-Request": "true"}
    post = {
        **htmx,
        "X-CSRFToken": csrf,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    body = urlencode({"new_email": "someone.else@example.com", "current_password": ""})
    return [
        Route("GET /healthz", wrk.Request(f"{base}/healthz"), 200, '"ok"'),
        Route(
            "GET /profile (full page)",
            wrk.Request(f"{base}/profile", headers=me),
            200,
            f"{address}</strong>",
        ),
        Route(
            "GET /profile (htmx, HX-Request)",
            wrk.Request(f"{base}/profile", headers=htmx),
            200,
            f"{address}</strong>",
        ),
        Route("GET /privacy", wrk.Request(f"{base}/privacy", headers=me), 200, "<html"),
        Route(
            "POST /profile/email (htmx, 422 before password check)",
            wrk.Request(f"{base}/profile/email", "POST", post, body),
            422,
            "Enter your current password.",
        ),
        Route("GET /login (sign-in page)", wrk.Request(f"{base}/login"), 200, "csrf-token"),
    ]


def check(route: Route) -> int:
    """One request as wrk will send it; returns the answer's size in bytes."""
    req = route.request
    r = requests.request(
        req.method,
        req.url,
        headers=dict(req.headers or {}),
        data=req.body or None,
        allow_redirects=False,
    )
    if r.status_code != route.status or route.text not in r.text:
        raise RuntimeError(f"{route.name}: unexpected answer {r.status_code} {r.text[:300]!r}")
    return len(r.content)


def measure(route: Route) -> wrk.Figures:
    wrk.run(route.request, wrk.WARMUP)
    fig = wrk.run(route.request)
    wrong = fig.requests - fig.status_errors if route.status >= 400 else fig.status_errors
    if wrong or fig.socket_errors:
        raise RuntimeError(
            f"{route.name}: {wrong} answers with another status than {route.status}, "
            f"{fig.socket_errors} socket errors (of {fig.requests})"
        )
    return fig


def median(runs: list[tuple[wrk.Figures, float]]) -> tuple[wrk.Figures, float, list[float]]:
    """The round with the median ratio to hello, and every round's ratio."""
    ratios = [fig.rps / around for fig, around in runs]
    middle = sorted(range(len(runs)), key=lambda i: ratios[i])[len(runs) // 2]
    return runs[middle][0], runs[middle][1], ratios


# -- the run ----------------------------------------------------------------------


def main() -> dict[str, Any]:
    wrk.executable()  # fail first, with the message, when wrk is missing
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
        app, base = start_gunicorn("bench.web:bench_app()", "/healthz", env, tmp / "app.log")
        stack.callback(stop, app)
        hello, hello_base = start_gunicorn("bench.hello:app", "/", env, tmp / "hello.log")
        stack.callback(stop, hello)

        address = f"bench-{secrets.token_hex(4)}@example.com"
        cookie, csrf = signed_in(base, address)
        floor = Route(HELLO, wrk.Request(f"{hello_base}/"), 200, "Hello, World!")
        check(floor)
        skipped: dict[str, str] = {}
        chosen: list[tuple[Route, int]] = []
        for route in routes(base, cookie, csrf, address):
            if ONLY and not any(word in route.name for word in ONLY):
                continue
            if route.name == "GET /privacy":
                probe = requests.get(route.request.url, headers=dict(route.request.headers or {}))
                if probe.status_code != 200:
                    skipped[route.name] = f"not in this build (answered {probe.status_code})"
                    continue
            chosen.append((route, check(route)))
        hellos = [measure(floor)]
        rounds: dict[str, list[tuple[wrk.Figures, float]]] = {r.name: [] for r, _ in chosen}
        for _ in range(ROUNDS):
            for route, _size in chosen:
                fig = measure(route)
                hellos.append(measure(floor))
                rounds[route.name].append((fig, (hellos[-2].rps + hellos[-1].rps) / 2))
        measured = {route.name: (*median(rounds[route.name]), size) for route, size in chosen}
        rss = {"app": worker_rss_mib(app.pid), "hello": worker_rss_mib(hello.pid)}

    floor_rps = sum(h.rps for h in hellos) / len(hellos)

    def row(
        fig: wrk.Figures, around: float = 0, ratios: list[float] | None = None, size: int = 0
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requests": fig.requests,
            "seconds": round(fig.seconds, 2),
            "rps": round(fig.rps, 1),
            "p50_ms": round(fig.p50_ms, 2),
            "p90_ms": round(fig.p90_ms, 2),
            "p99_ms": round(fig.p99_ms, 2),
        }
        if ratios is not None:
            out["bytes"] = size
            out["hello_rps_around"] = round(around, 1)
            out["ratio_to_hello"] = round(fig.rps / around, 3)
            out["ratio_each_round"] = [round(x, 3) for x in ratios]
        return out

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
        "load": {"client": "wrk", "rounds": ROUNDS, **wrk.settings()},
        "hello": {
            "runs": [row(h) for h in hellos],
            "rps_mean": round(floor_rps, 1),
        },
        "routes": {name: row(*m) for name, m in measured.items()},
        "skipped": skipped,
        "worker_rss_mib": rss,
    }


def print_table(r: dict[str, Any]) -> None:
    ld, s = r["load"], r["server"]
    print(
        f"\nweb bench: {r['backend']} + {r['redis']} Redis; gunicorn {s['gunicorn_workers']} "
        f"workers x {s['gunicorn_threads']} threads; wrk -t{ld['wrk_threads']} "
        f"-c{ld['connections']} -d{ld['seconds_per_route']:g}s per route"
    )
    cpus, avg = r["machine"]["cpus"], r["machine"]["load_average_at_start"]
    print(f"machine: {cpus} CPUs shared by wrk and both servers, load average at start {avg}")
    print(f"rate limits: {s['rate_limits']}\n")
    head = f"{'route':<54} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'vs hello':>9}"
    print(head)
    print("-" * len(head))
    h = r["hello"]
    first = h["runs"][0]
    print(
        f"{HELLO:<54} {h['rps_mean']:>8.1f} {first['p50_ms']:>8.2f} "
        f"{first['p99_ms']:>8.2f} {1:>9.3f}"
    )
    each = ", ".join(f"{x['rps']:.0f}" for x in h["runs"])
    print(f"  hello req/s before the first route and after each: {each}")
    for name, f in r["routes"].items():
        each = " ".join(f"{x:.3f}" for x in f["ratio_each_round"])
        print(
            f"{name:<54} {f['rps']:>8.1f} {f['p50_ms']:>8.2f} {f['p99_ms']:>8.2f} "
            f"{f['ratio_to_hello']:>9.3f}  (rounds: {each})"
        )
    for name, why in r["skipped"].items():
        print(f"{name:<54} skipped: {why}")
    rss = r["worker_rss_mib"]
    print(f"\nresident memory per gunicorn worker (MiB): app {rss['app']}, hello {rss['hello']}")


if __name__ == "__main__":
    try:
        result = main()
    except wrk.WrkMissing as exc:
        raise SystemExit(str(exc)) from None
    print_table(result)
    if ONLY:
        print(f"BENCH_ROUTES={','.join(ONLY)}: a partial run, {RESULTS.name} left as it was")
    else:
        write_result(RESULTS, result)
