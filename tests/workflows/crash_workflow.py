"""A workflow for the crash test, loaded by a real worker subprocess too."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import webapp.workflows as wf
from webapp.workflows.definition.model import RunContext
from webapp.workflows.engine import heartbeat as leases


def _mark(ctx: RunContext, what: str) -> None:
    with open(os.environ["CRASH_MARKS"], "a") as fh:
        fh.write(f"{ctx.run_id}:{what}\n")
        fh.flush()
        os.fsync(fh.fileno())


def step_a(ctx: RunContext) -> str:
    _mark(ctx, "a")
    return "a"


def step_b(ctx: RunContext) -> str:
    _mark(ctx, "b-start")
    if Path(os.environ["CRASH_MARKS"] + ".hang").exists():
        time.sleep(60)  # the test SIGKILLs the worker here
    _mark(ctx, "b")
    return "b"


def step_c(ctx: RunContext) -> str:
    _mark(ctx, "c")
    return "c"


CRASH = wf.workflow(
    "crash-test",
    on="crash.requested",
    steps=[
        wf.compute("a", step_a),
        wf.compute("b", step_b),
        wf.wait("nap", timedelta(0)),
        wf.compute("c", step_c),
        wf.ret("done"),
    ],
)


def main() -> None:
    """Worker entry for the subprocess: register the workflow, run the worker."""
    from worker.run_worker import main as run_worker
    from worker.tasks import _worker_app

    leases.LEASE = timedelta(seconds=float(os.environ.get("CRASH_LEASE_S", "10")))
    _worker_app()
    wf.register(CRASH)
    run_worker()
