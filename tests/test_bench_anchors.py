"""`make bench-anchors`' pure parts: the ratios, verdicts and table; and that DBOS's
side at least compiles (it runs only in bench/.venv-dbos, which tests never need)."""

from __future__ import annotations

import py_compile
from pathlib import Path

from bench.anchors_table import ratio, rows, table, verdict

ROOT = Path(__file__).resolve().parent.parent

DBOS = {
    "dbos_version": "3.4.0",
    "runs_per_s": {"step_sleep0": 100.0, "three_steps": 50.0},
    "send_recv_ms": {"p50": 12.0, "p95": 24.0, "p99": 30.0, "n": 60},
}
OURS = {"runs_per_s": 250.0, "event_resume_ms": {"p50": 6.0, "p95": 10.0, "p99": 11.0, "n": 60}}


def test_ratio_is_above_one_when_ours_is_ahead_for_throughput_and_latency() -> None:
    assert ratio(300.0, 100.0, higher_is_better=True) == 3.0
    assert ratio(8.0, 16.0, higher_is_better=False) == 2.0
    assert ratio(20.0, 10.0, higher_is_better=False) == 0.5


def test_verdict_names_the_best_target_met() -> None:
    assert verdict(3.1, 2.0, 3.0, higher_is_better=True) == "goal"
    assert verdict(2.5, 2.0, 3.0, higher_is_better=True) == "floor"
    assert verdict(1.9, 2.0, 3.0, higher_is_better=True) == "MISSED"
    assert verdict(7.9, 12.0, 8.0, higher_is_better=False) == "goal"
    assert verdict(12.0, 12.0, 8.0, higher_is_better=False) == "floor"
    assert verdict(12.1, 12.0, 8.0, higher_is_better=False) == "MISSED"


def test_rows_compare_with_dboss_faster_variant_and_judge_the_targets() -> None:
    by_figure = {r["figure"]: r for r in rows(DBOS, OURS)}
    runs = by_figure["3-step runs/s"]
    assert (runs["dbos"], runs["ours"], runs["ratio"], runs["verdict"]) == (
        100.0,
        250.0,
        2.5,
        "floor",
    )
    assert by_figure["3-step runs/s (DBOS: 3 @step)"]["ratio"] == 5.0
    assert by_figure["event -> resume p50 ms"]["ratio"] == 2.0
    p95 = by_figure["event -> resume p95 ms"]
    assert (p95["dbos"], p95["ours"], p95["ratio"], p95["verdict"]) == (24.0, 10.0, 2.4, "floor")


def test_table_prints_one_line_per_figure_with_its_ratio() -> None:
    result = {
        "dbos": DBOS,
        "ours": OURS,
        "rows": rows(DBOS, OURS),
        "workers": 2,
        "cpus": 2,
        "load_average_at_start": 0.5,
    }
    lines = table(result).splitlines()
    assert "DBOS 3.4.0" in lines[0]
    (runs_line,) = [ln for ln in lines if ln.startswith("3-step runs/s ") and "DBOS:" not in ln]
    assert runs_line.split()[2:5] == ["100.0", "250.0", "2.5x"]
    assert runs_line.endswith("floor")
    (p95_line,) = [line for line in lines if line.startswith("event -> resume p95")]
    assert "2.4x" in p95_line and p95_line.endswith("floor")


def test_dbos_side_script_compiles(tmp_path: Path) -> None:
    out = tmp_path / "anchors_dbos.pyc"
    py_compile.compile(str(ROOT / "bench" / "anchors_dbos.py"), cfile=str(out), doraise=True)
    assert out.stat().st_size > 0
