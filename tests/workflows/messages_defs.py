"""Workflows that talk to their runs (signals, state, updates), loaded by the
tests and by their real worker subprocesses (`main`)."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

import webapp.workflows as wf
from webapp.workflows.engine import heartbeat
from webapp.workflows.store import projection
from worker.run_worker import main as run_worker
from worker.tasks import _worker_app


def _judge(results: Any, payload: Any) -> Any:
    """Accept an amount up to the run's limit; {"slow": s} answers after s seconds."""
    time.sleep(float(payload.get("slow", 0)))
    if payload.get("amount", 0) > results["limit"]:
        raise wf.Rejected(f"over the limit of {results['limit']}")
    return {"approved": payload["amount"]}


def _hang_once(results: Any, payload: Any) -> Any:
    """Hangs in the first process that judges an update (the test SIGKILLs it)."""
    marks = os.environ.get("MESSAGES_MARKS")
    if marks:
        with open(marks, "a") as fh:
            fh.write(f"judging:{os.getpid()}\n")
        try:
            os.close(os.open(marks + ".hung", os.O_CREAT | os.O_EXCL))
            while True:  # until the test SIGKILLs this process
                time.sleep(60)
        except FileExistsError:
            pass
    return {"seen": payload["n"]}


# Two signals in turn, state along the way, and an update judged by a limit.
APPROVAL = wf.workflow(
    "messages-approval",
    on="messages.order-placed",
    steps=[
        wf.compute("limit", lambda ctx: 100),
        wf.set_state("mark-waiting", "stage", "waiting for approval"),
        wf.wait_for_signal("first", timeout="P2D", signal="approve"),
        wf.wait_for_signal("second", timeout="P2D", signal="approve"),
        wf.set_state("mark-approved", "stage", "approved"),
        wf.wait_for_update("amount", handler=_judge, timeout="P1D"),
        wf.set_state("mark-done", "stage", "done"),
        wf.ret(lambda ctx: {"signals": [ctx["first"], ctx["second"]], "amount": ctx["amount"]}),
    ],
)

# Started by update-with-start: waits for its first update at once.
STARTED = wf.workflow(
    "messages-started",
    on="messages.never",
    steps=[
        wf.compute("limit", lambda ctx: 10),
        wf.wait_for_update("amount", handler=_judge, timeout="P1D"),
        wf.ret(lambda ctx: ctx["amount"]),
    ],
)

# Its update's judge hangs in the first worker (the SIGKILL test).
CRASHING = wf.workflow(
    "messages-crashing",
    on="messages.crash",
    steps=[wf.wait_for_update("note", handler=_hang_once, timeout="P1D"), wf.ret("done")],
)


def _emit_entries(ctx: Any) -> int:
    for i in range(1, ENTRIES + 1):
        ctx.emit("step", {"message": f"entry {i}"})
        time.sleep(0.01)
    return ENTRIES


ENTRIES = 50

# Waits for "go", then emits 50 progress entries (a live page follows them).
STREAMING = wf.workflow(
    "messages-streaming",
    on="messages.stream",
    steps=[
        wf.wait_for_signal("go", timeout="P1D"),
        wf.compute("emit", _emit_entries),
        wf.ret("streamed"),
    ],
)

ALL = (APPROVAL, STARTED, CRASHING, STREAMING)


def main() -> None:
    """Worker entry for the subprocess: the workflows, then the worker. With
    MESSAGES_LEASE_S, leases that long (only a takeover continues a killed
    worker's run)."""
    if os.environ.get("MESSAGES_LEASE_S"):
        heartbeat.LEASE = timedelta(seconds=float(os.environ["MESSAGES_LEASE_S"]))
        projection.START_GRACE = heartbeat.LEASE
    _worker_app()
    for d in ALL:
        wf.register(d)
    run_worker()
