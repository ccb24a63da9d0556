"""Workflows for the child-run crash test, loaded by real worker subprocesses."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import webapp.workflows as wf
from webapp.workflows.definition.model import RunContext
from webapp.workflows.engine import heartbeat as leases


def _mark(what: str) -> None:
    with open(os.environ["CRASH_MARKS"], "a") as fh:
        fh.write(f"{what}\n")
        fh.flush()
        os.fsync(fh.fileno())


def child_input(ctx: RunContext) -> dict[str, Any]:
    _mark(f"{ctx.run_id}:input")
    return {"n": ctx.trigger.payload["n"]}


def child_work(ctx: RunContext) -> int:
    _mark(f"child:{ctx.run_id}:start")
    if Path(os.environ["CRASH_MARKS"] + ".hang").exists():
        time.sleep(60)  # the test SIGKILLs the worker here, its parent suspended
    return int(ctx.trigger.payload["input"]["n"]) * 10


CHILD = wf.workflow(
    "crash-child",
    child=True,
    steps=[wf.compute("work", child_work), wf.ret(lambda ctx: ctx["work"])],
)
PARENT = wf.workflow(
    "crash-parent",
    on="family.requested",
    steps=[
        wf.run_workflow("crash-child", input=child_input),
        wf.ret(lambda ctx: ctx["crash-child"] + 1),
    ],
)


def main() -> None:
    from worker.run_worker import main as run_worker
    from worker.tasks import _worker_app

    leases.LEASE = timedelta(seconds=float(os.environ.get("CRASH_LEASE_S", "10")))
    _worker_app()
    wf.register(CHILD)
    wf.register(PARENT)
    run_worker()
