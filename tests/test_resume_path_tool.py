"""tools/resume_path.py, the count of modules one resume passes through
counts what it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from resume_path import counts  # noqa: E402


def test_counts_distinct_modules_and_returns_into_one_already_left():
    assert counts([]) == (0, 0)
    assert counts(["a", "a", "a"]) == (1, 0)  # calls within one module are no return
    assert counts(["a", "b", "a", "c", "c", "b"]) == (3, 2)


def test_the_tool_traces_a_real_resume():
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "resume_path.py"), "--trace"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    first = out.splitlines()[0]
    assert first.startswith("webapp.workflows: ") and "modules visited" in first
    visited = int(first.split(": ")[1].split()[0])
    returns = int(first.split(", ")[1].split()[0])
    assert visited > 1
    # The shape a resume keeps: a module per concept on its path (it was 25
    # modules and 67 returns before the engine was cut by concept; 20 and 44
    # counting the control flow only).
    assert visited <= 13 and returns <= 35, first
    (flow,) = [line for line in out.splitlines() if line.startswith("control flow:")]
    flow_visited, flow_returns = (int(part.split()[0]) for part in flow[17:].split(", "))
    assert flow_visited <= 11 and flow_returns <= 20, flow
    assert "webapp.workflows.engine.resume" in out  # the one claim writer is on the path
