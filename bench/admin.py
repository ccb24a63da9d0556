"""Operations console benchmark: `python -m bench.admin` (or `make bench`).

Fills a **scratch** database (BENCH_DATABASE_URL, its public schema is
dropped; default a temporary SQLite file) with BENCH_ADMIN_RUNS (100,000)
workflow runs over a week, in five workflows and the statuses a busy system
has (most completed, some waiting, a few failed, running or cancelled), signs
in an admin with the app's own pages, then times the answers an on-call
engineer asks for, each BENCH_ADMIN_REPEAT times in this process (Flask's
test client: the whole request, the gate, the queries and the render, no
network):

- `GET /healthz` (one `SELECT 1`): the baseline;
- `GET /admin/runs`: newest 50 of the default tenant, with the counts per status;
- `?status=failed`, `?workflow=...`, `?started_after=...`: the filters;
- the 50th page by keyset (`before=`), the deep page that OFFSET would make slow;
- `HX-Request` (the 5 s live refresh: the table fragment only).

It prints p50 / p95 in ms and the ratio to the baseline, and writes
`bench/results/admin.json` (one entry per backend). Target: p95 < 100 ms on
PostgreSQL for every runs-list variant.
"""

from __future__ import annotations

import os
import platform
import re
import secrets
import statistics
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import services, write_result

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "admin.json"
RUNS = int(os.environ.get("BENCH_ADMIN_RUNS", "100000"))
REPEAT = int(os.environ.get("BENCH_ADMIN_REPEAT", "200"))
PASSWORD = "correct horse battery staple"
WORKFLOWS = ["order-fulfilment", "invoice-reminder", "email-verification", "nightly-export", "sync"]
# (stored status, share of runs)
MIX = [("completed", 0.85), ("suspended", 0.08), ("failed", 0.04), ("running", 0.02)]


def status_for(i: int) -> str:
    x, acc = (i * 7919 % 10000) / 10000, 0.0
    for status, share in MIX:
        acc += share
        if x < acc:
            return status
    return "cancelled"


def fill(n: int, now: datetime) -> None:
    from sqlalchemy import insert, text

    from webapp.core import db
    from webapp.workflows.store.tables import workflow_runs

    span = timedelta(days=7).total_seconds()
    rows: list[dict[str, Any]] = []
    with db.transaction() as conn:
        for i in range(n):
            started = now - timedelta(seconds=span * (n - i) / n)
            status = status_for(i)
            rows.append(
                dict(
                    tenant_id="default",
                    run_id=str(uuid.uuid4()),
                    workflow_name=WORKFLOWS[i % len(WORKFLOWS)],
                    status=status,
                    step_index=i % 3,
                    attempt=1,
                    version=3,
                    fingerprint="f" * 64,
                    started_position=i,
                    results={"n": i},
                    error="workflow step failed (RuntimeError)" if status == "failed" else None,
                    started_at=started,
                    updated_at=started + timedelta(seconds=5),
                )
            )
            if len(rows) == 5000:
                conn.execute(insert(workflow_runs), rows)
                rows = []
        if rows:
            conn.execute(insert(workflow_runs), rows)
    # The steady state autovacuum keeps: statistics and the visibility map (so the
    # counts per status are index-only scans).
    with db.get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE" if db.is_sqlite(conn) else "VACUUM ANALYZE workflow_runs"))


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', html)
    if not found:
        raise RuntimeError("no csrf token on the page")
    return found.group(1)


def admin_client(app: Any) -> Any:
    from webapp.admin import grants
    from webapp.core import actors

    address = f"bench-{secrets.token_hex(4)}@example.com"
    c = app.test_client()
    token = csrf_of(c.get("/register").get_data(as_text=True))
    form = {"email": address, "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token}
    if c.post("/register", data=form).status_code != 200:
        raise RuntimeError("registration failed")
    grants.set_admin(address, True, actors.operator())
    token = csrf_of(c.get("/login").get_data(as_text=True))
    form = {"email": address, "password": PASSWORD, "csrf_token": token}
    if c.post("/login", data=form).status_code != 302:
        raise RuntimeError("sign-in failed")
    return c


def timed(c: Any, cases: dict[str, tuple[str, dict[str, str] | None]]) -> dict[str, Any]:
    """p50/p95 per case; the cases take turns, so a burst of load on the (shared)
    machine hits all of them alike instead of whichever ran during it."""
    for url, headers in cases.values():
        for _ in range(5):  # warm caches and the connection pool
            c.get(url, headers=headers)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(REPEAT):
        for name, (url, headers) in cases.items():
            t0 = time.perf_counter()
            resp = c.get(url, headers=headers)
            samples[name].append((time.perf_counter() - t0) * 1000)
            if resp.status_code != 200:
                raise RuntimeError(f"{url}: {resp.status_code}")
    out = {}
    for name, values in samples.items():
        values.sort()
        out[name] = {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(values[int(len(values) * 0.95) - 1], 2),
        }
    return out


def deep_cursor(c: Any, pages: int) -> str:
    url = "/admin/runs"
    for _ in range(pages - 1):
        html = c.get(url).get_data(as_text=True)
        found = re.search(r'id="admin-runs-next" href="([^"]+)"', html)
        if not found:
            raise RuntimeError("ran out of pages")
        url = found.group(1).replace("&amp;", "&")
    return url


def main() -> dict[str, Any]:
    from webapp import create_app
    from webapp.core.config import Config

    load_at_start = os.getloadavg()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-admin-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": redis_url,
            "INSTANCE_PATH": str(tmp / "instance"),
            "SECRET_KEY": secrets.token_urlsafe(32),
            "LOG_LEVEL": "WARNING",
            "HEALTHZ_CACHE_MS": "0",  # the baseline asks the database every time
        }
        app = create_app(Config.from_env(env))
        with app.app_context():
            now = datetime.now(UTC)
            t0 = time.perf_counter()
            fill(RUNS, now)
            fill_s = time.perf_counter() - t0
            c = admin_client(app)
            after = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
            cases = {
                "GET /healthz (baseline)": ("/healthz", None),
                "runs, newest 50": ("/admin/runs", None),
                "runs, status=failed": ("/admin/runs?status=failed", None),
                "runs, workflow=sync": ("/admin/runs?workflow=sync", None),
                "runs, started after 1 day ago": (f"/admin/runs?started_after={after}", None),
                "runs, page 50 (keyset)": (deep_cursor(c, 50), None),
                "runs, live refresh (htmx)": ("/admin/runs", {"HX-Request": "true"}),
            }
            figures = timed(c, cases)
    base = figures["GET /healthz (baseline)"]["p50_ms"]
    for f in figures.values():
        f["ratio_p50"] = round(f["p50_ms"] / base, 1) if base else 0.0
    return {
        "backend": "postgresql" if db_url.startswith("postgres") else "sqlite",
        "runs": RUNS,
        "repeat": REPEAT,
        "fill_seconds": round(fill_s, 1),
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_at_start": [round(x, 2) for x in load_at_start],
        "python": platform.python_version(),
        "figures": figures,
    }


def print_table(r: dict[str, Any]) -> None:
    print(f"\nconsole on {r['runs']:,} runs ({r['backend']}), {r['repeat']} requests each")
    print(f"  {'request':<32} {'p50 ms':>8} {'p95 ms':>8} {'x base':>7}")
    for name, f in r["figures"].items():
        print(f"  {name:<32} {f['p50_ms']:>8.2f} {f['p95_ms']:>8.2f} {f['ratio_p50']:>7.1f}")


if __name__ == "__main__":
    result = main()
    print_table(result)
    write_result(RESULTS, result)
