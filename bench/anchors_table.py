"""The pure part of `make bench-anchors`: the table from the two sides' figures.

No database, no DBOS, no product imports, so tests/test_bench_anchors.py can
check it without either venv's services.
"""

from __future__ import annotations

from typing import Any

# The targets: throughput as a multiple of DBOS's, the resume p95 in ms.
RUNS_RATIO_FLOOR, RUNS_RATIO_GOAL = 2.0, 3.0
RESUME_P95_FLOOR_MS, RESUME_P95_GOAL_MS = 12.0, 8.0


def ratio(ours: float, dbos: float, higher_is_better: bool) -> float:
    """> 1 means we win: ours/DBOS for a throughput, DBOS/ours for a latency."""
    num, den = (ours, dbos) if higher_is_better else (dbos, ours)
    return round(num / den, 2) if den else float("nan")


def verdict(value: float, floor: float, goal: float, higher_is_better: bool) -> str:
    def ok(target: float) -> bool:
        return value >= target if higher_is_better else value <= target

    return "goal" if ok(goal) else "floor" if ok(floor) else "MISSED"


def rows(dbos: dict[str, Any], ours: dict[str, Any]) -> list[dict[str, Any]]:
    """The table, from the two sides' raw results. DBOS's throughput is its faster
    variant (the literal step -> sleep(0) -> return), so the ratio is the harder one."""
    d_runs = dbos["runs_per_s"]
    d_best = max(d_runs.values())
    d_lat = dbos["send_recv_ms"]
    o_lat = ours["event_resume_ms"]
    runs_ratio = ratio(ours["runs_per_s"], d_best, True)
    p95_ratio = ratio(o_lat["p95"], d_lat["p95"], False)
    return [
        {
            "figure": "3-step runs/s",
            "dbos": d_best,
            "ours": ours["runs_per_s"],
            "ratio": runs_ratio,
            "target": f"ratio >= {RUNS_RATIO_FLOOR:g}x floor, {RUNS_RATIO_GOAL:g}x goal",
            "verdict": verdict(runs_ratio, RUNS_RATIO_FLOOR, RUNS_RATIO_GOAL, True),
        },
        {
            "figure": "3-step runs/s (DBOS: 3 @step)",
            "dbos": d_runs["three_steps"],
            "ours": ours["runs_per_s"],
            "ratio": ratio(ours["runs_per_s"], d_runs["three_steps"], True),
            "target": "",
            "verdict": "",
        },
        {
            "figure": "event -> resume p50 ms",
            "dbos": d_lat["p50"],
            "ours": o_lat["p50"],
            "ratio": ratio(o_lat["p50"], d_lat["p50"], False),
            "target": "",
            "verdict": "",
        },
        {
            "figure": "event -> resume p95 ms",
            "dbos": d_lat["p95"],
            "ours": o_lat["p95"],
            "ratio": p95_ratio,
            "target": f"ours <= {RESUME_P95_FLOOR_MS:g} ms floor, {RESUME_P95_GOAL_MS:g} ms goal",
            "verdict": verdict(o_lat["p95"], RESUME_P95_FLOOR_MS, RESUME_P95_GOAL_MS, False),
        },
    ]


def table(result: dict[str, Any]) -> str:
    lines = [
        f"DBOS {result['dbos']['dbos_version']} vs ours, PostgreSQL, "
        f"{result['workers']} worker processes each, {result['cpus']} cpus, "
        f"load average {result['load_average_at_start']}",
        f"{'figure':<31} {'DBOS':>8} {'ours':>8} {'ratio':>7}  {'target':<38} verdict",
    ]
    for r in result["rows"]:
        lines.append(
            f"{r['figure']:<31} {r['dbos']:>8} {r['ours']:>8} {r['ratio']:>6}x  "
            f"{r['target']:<38} {r['verdict']}".rstrip()
        )
    lines.append("ratio > 1 means ours is ahead (ours/DBOS for runs/s, DBOS/ours for latency)")
    return "\n".join(lines)
