"""Cost against history: `python -m bench.history` (or `make bench-history`).

Does the work cost the same with a million events already in the log as on
an empty one (issue 23, point 8)? For the database of BENCH_DATABASE_URL (a
**scratch** PostgreSQL database: its public schema is dropped, twice per
round) or a temporary SQLite file, each round measures the same three
figures on an empty log and then on a log holding HISTORY_EVENTS (1,000,000)
events of completed runs, their triggers, awaited events and accounts
(`bench.history_load`, cursors caught up), each with fresh workers
(`bench.workflows.Bench`):

- event -> resume p50 / p95: `bench.workflows`' awaited event appended ->
  step.resumed, HISTORY_RESUMES (60) runs;
- drain: HISTORY_DRAIN (10,000) due runs drained to completion;
- the runs list: the console's `/admin/runs` (newest 50, a workflow filter, a
  status filter, the htmx refresh) and `flask workflows runs`, HISTORY_LIST_REPEAT
  (100) times each, p50 / p95.

It prints each figure empty and with history, their ratio and the verdict
against the floor (1.2x) and goal (1.05x), and writes
`bench/results/history.json` (one entry per backend). With HISTORY_ROUNDS > 1
each figure is the median over the rounds.
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine

import bench.admin as admin_bench
import bench.workflows as flow_bench
from bench import history_load
from bench.common import services, write_result
from webapp.core import db
from webapp.eventstore import positions

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "history.json"
EVENTS = int(os.environ.get("HISTORY_EVENTS", "1000000"))
DRAIN = int(os.environ.get("HISTORY_DRAIN", "10000"))
RESUMES = int(os.environ.get("HISTORY_RESUMES", "60"))
LIST_REPEAT = int(os.environ.get("HISTORY_LIST_REPEAT", "100"))
ROUNDS = int(os.environ.get("HISTORY_ROUNDS", "1"))
FLOOR, GOAL = 1.2, 1.05
MODULES = "bench.workflows,bench.history_load"


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[max(0, min(len(s) - 1, round(q * (len(s) - 1))))], 2)


def runs_list(app: Any) -> dict[str, float]:
    """p50 / p95 ms of the runs list: the console's pages (whole requests,
    in-process) and the CLI command (in-process, its output included)."""
    admin_bench.REPEAT = LIST_REPEAT
    c = admin_bench.admin_client(app)
    pages = admin_bench.timed(
        c,
        {
            "runs newest 50": ("/admin/runs", None),
            "runs workflow=bench-backlog": ("/admin/runs?workflow=bench-backlog", None),
            "runs status=completed": ("/admin/runs?status=completed", None),
            "runs htmx refresh": ("/admin/runs", {"HX-Request": "true"}),
        },
    )
    out: dict[str, float] = {}
    for name, f in pages.items():
        out[f"{name} p50 ms"], out[f"{name} p95 ms"] = f["p50_ms"], f["p95_ms"]
    cli = app.test_cli_runner()
    samples = []
    for i in range(LIST_REPEAT + 5):
        t0 = time.perf_counter()
        result = cli.invoke(args=["workflows", "runs"])
        if i >= 5:  # the first few warm up
            samples.append((time.perf_counter() - t0) * 1000)
        if result.exit_code != 0:
            raise RuntimeError(f"flask workflows runs: {result.output}")
    out["flask workflows runs p50 ms"] = _p(samples, 0.5)
    out["flask workflows runs p95 ms"] = _p(samples, 0.95)
    return out


def phase(events: int, tmp: Path) -> dict[str, Any]:
    """One log (empty, or `events` long): load it, start workers, measure."""
    with ExitStack() as stack:
        db_url, redis_url = services(stack, tmp, reset=True)
        positions.forget()  # the database was recreated under the same URL
        t0 = time.perf_counter()
        engine = create_engine(db_url)
        with engine.begin() as conn:
            loaded = history_load.load(conn, events)
        load_s = time.perf_counter() - t0
        history_load.analyze(engine)
        engine.dispose()
        analyze_s = time.perf_counter() - t0 - load_s
        bench = flow_bench.Bench(db_url, redis_url, tmp / "instance", modules=MODULES)
        stack.callback(bench.stop)
        with db.transaction() as conn:
            history_load.catch_up(conn, loaded)
        bench.start()
        load_avg = os.getloadavg()
        flow_bench.RESUMES = RESUMES
        resume = bench.event_resume_ms()
        flow_bench.BACKLOG = DRAIN
        drain = bench.backlog_drain_s()
        figures = {
            "event resume p50 ms": _p(resume, 0.5),
            "event resume p95 ms": _p(resume, 0.95),
            "drain s": round(drain, 2),
            **runs_list(bench.app),
        }
    return {
        "events": loaded,
        "load_s": round(load_s, 1),
        "analyze_s": round(analyze_s, 1),
        "load_average": [round(x, 2) for x in load_avg],
        "figures": figures,
    }


def verdict(ratio: float) -> str:
    return "goal" if ratio <= GOAL else "floor" if ratio <= FLOOR else "MISSED"


def main() -> dict[str, Any]:
    rounds: list[tuple[dict[str, Any], dict[str, Any]]] = []
    backend = "postgresql" if os.environ.get("BENCH_DATABASE_URL") else "sqlite"
    for r in range(ROUNDS):
        with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
            print(f"round {r + 1}/{ROUNDS}: empty log", flush=True)
            empty = phase(0, Path(tmp) / "empty")
            print(f"round {r + 1}/{ROUNDS}: {EVENTS:,} events in the log", flush=True)
            full = phase(EVENTS, Path(tmp) / "full")
            print(f"  history loaded in {full['load_s']} s (+{full['analyze_s']} s analyze)")
        rounds.append((empty, full))
    names = list(rounds[0][0]["figures"])
    figures = {}
    for name in names:
        e = statistics.median(rd[0]["figures"][name] for rd in rounds)
        h = statistics.median(rd[1]["figures"][name] for rd in rounds)
        ratio = round(h / e, 2) if e else float("nan")
        figures[name] = {"empty": e, "history": h, "ratio": ratio, "verdict": verdict(ratio)}
    result = {
        "backend": backend,
        "events": EVENTS,
        "drain_runs": DRAIN,
        "resumes": RESUMES,
        "list_repeat": LIST_REPEAT,
        "rounds": ROUNDS,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "floor": FLOOR,
        "goal": GOAL,
        "load_s": [rd[1]["load_s"] for rd in rounds],
        "analyze_s": [rd[1]["analyze_s"] for rd in rounds],
        "load_average": {
            "empty": [rd[0]["load_average"] for rd in rounds],
            "history": [rd[1]["load_average"] for rd in rounds],
        },
        "figures": figures,
    }
    print_table(result)
    write_result(RESULTS, result)
    return result


def print_table(r: dict[str, Any]) -> None:
    print(f"\n{r['backend']}: empty log vs {r['events']:,} events, {r['rounds']} round(s)")
    print(f"  history loaded in {r['load_s']} s; load average {r['load_average']}")
    print(f"  {'figure':<38} {'empty':>9} {'history':>9} {'ratio':>6}  verdict (1.2x / 1.05x)")
    for name, f in r["figures"].items():
        print(f"  {name:<38} {f['empty']:>9} {f['history']:>9} {f['ratio']:>6}  {f['verdict']}")


if __name__ == "__main__":
    main()
