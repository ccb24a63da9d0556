"""A workflow for the takeover test, loaded by real worker subprocesses too.

Step "b" hangs in the first process that runs it (the test SIGKILLs that
process there); every other execution goes straight through. Each step marks
what it did, with its process id, in a file; the two append_event steps are
the database effects, counted in the event log."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import webapp.workflows as wf
from webapp.workflows.definition.model import RunContext
from webapp.workflows.engine import heartbeat
from webapp.workflows.store import projection
from worker.run_worker import main as run_worker
from worker.tasks import _worker_app


def _mark(ctx: RunContext, what: str) -> None:
    with open(os.environ["TAKEOVER_MARKS"], "a") as fh:
        fh.write(f"{ctx.run_id}:{what}:{os.getpid()}\n")
        fh.flush()
        os.fsync(fh.fileno())


def _first_to_get_here() -> bool:
    try:
        os.close(os.open(os.environ["TAKEOVER_MARKS"] + ".hung", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def step_a(ctx: RunContext) -> str:
    _mark(ctx, "a")
    return "a"


def step_b(ctx: RunContext) -> str:
    # Who hangs is decided before the mark the test waits for is written: the
    # test kills at that mark, and a process killed between the mark and the
    # decision would leave the hang to the survivor.
    first = _first_to_get_here()
    _mark(ctx, "b-start")
    if first:
        while True:  # until the test SIGKILLs this process
            time.sleep(60)
    _mark(ctx, "b")
    return "b"


def step_c(ctx: RunContext) -> str:
    _mark(ctx, "c")
    return "c"


def step_pure(ctx: RunContext) -> str:
    """A pure step that ends the run: run ahead of the lease (settle ahead)."""
    first = _first_to_get_here()  # before the mark, as in step_b
    _mark(ctx, "pure-start")
    if first:
        while True:  # until the test SIGKILLs this process
            time.sleep(60)
    return "pure"


TAKEOVER = wf.workflow(
    "takeover-test",
    on="takeover.requested",
    steps=[
        wf.compute("a", step_a),
        wf.append_event("before", "takeover-note", lambda c: c.run_id, "takeover.before"),
        wf.compute("b", step_b),
        wf.append_event("after", "takeover-note", lambda c: c.run_id, "takeover.after"),
        wf.compute("c", step_c),
        wf.ret("done"),
    ],
)


AHEAD = wf.workflow(
    "takeover-ahead", on="ahead.requested", steps=[wf.compute("p", step_pure), wf.ret("done")]
)


def main() -> None:
    """Worker entry for the subprocess: a lease and a start grace of
    TAKEOVER_LEASE_S seconds (the test makes them far longer than the test
    may take, so only a takeover can continue the killed worker's run), the
    workflows, the worker."""
    heartbeat.LEASE = timedelta(seconds=float(os.environ["TAKEOVER_LEASE_S"]))
    projection.START_GRACE = heartbeat.LEASE  # a new run nobody leased is not re-dispatched either
    _worker_app()
    wf.register(TAKEOVER)
    wf.register(AHEAD)
    run_worker()
