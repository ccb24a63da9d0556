"""Trace context survives a worker restart: a run's first step runs in one
worker process, the worker stops, and the step after the wait runs in a second
worker process; both step spans (read from each worker's console exporter)
are in the run's one trace. Tracing is on in the workers only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import select

from tests import procs
from webapp.core import db
from webapp.eventstore import projections
from webapp.publish import publish
from webapp.workflows.store.tables import workflow_runs

MODULE = "tests.tracing.flows"


def console_spans(log: Path) -> list[dict[str, Any]]:
    """The spans ConsoleSpanExporter printed (JSON objects) among the log lines."""
    text, decoder, out, i = log.read_text(), json.JSONDecoder(), [], 0
    while (i := text.find("{", i)) != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(obj, dict) and "context" in obj and "name" in obj:
            out.append(obj)
        i = end
    return out


def run_row() -> Any:
    with db.reading() as conn:
        return conn.execute(
            select(workflow_runs).where(workflow_runs.c.workflow_name == "trace-two-steps")
        ).first()


def mounted() -> bool:
    with db.reading() as conn:
        return "workflow-trace-two-steps" in {r["name"] for r in projections.status(conn)}


def test_a_run_stays_one_trace_across_a_worker_restart_between_two_steps(
    app: Flask, database_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = procs.app_env(
        database_url,
        redis_url,
        tmp_path / "instance",
        WORKFLOW_MODULES=MODULE,
        OTEL_TRACES_EXPORTER="console",
        OTEL_SERVICE_NAME="worker",
    )
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = procs.worker(env, first_log)
    try:
        procs.until(mounted, what="the worker mounted the test workflow")
        publish("trace.start", "thing", "k1", {})
        procs.until(
            lambda: (r := run_row()) is not None and r.status == "suspended",
            what="the run waits after its first step",
        )
    finally:
        first.stop()
    second = procs.worker(env, second_log)
    try:
        publish("trace.go", "thing", "k2", {"key": "k1"})
        procs.until(
            lambda: (r := run_row()) is not None and r.status == "completed",
            what="the second worker ran the step after the wait",
        )
    finally:
        second.stop()

    def steps(log: Path) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in console_spans(log) if s["name"].startswith("step ")}

    before, after = steps(first_log), steps(second_log)
    assert set(before) == {"step first"}, first_log.read_text()[-3000:]
    assert set(after) == {"step second"}, second_log.read_text()[-3000:]
    trace_id = before["step first"]["context"]["trace_id"]
    assert after["step second"]["context"]["trace_id"] == trace_id
    # Published without a trace: the run's trace id is derived from its id, so
    # any process finds the same one.
    run = run_row()
    derived = hashlib.sha256(f"{run.tenant_id}:{run.run_id}".encode()).hexdigest()[:32]
    assert trace_id == "0x" + derived
    assert before["step first"]["parent_id"] == after["step second"]["parent_id"]
    assert before["step first"]["attributes"]["workflow.run_id"] == run.run_id
