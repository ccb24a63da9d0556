"""A worker for the hand-off crash test, run as a real subprocess: it
SIGKILLs itself at one point of the timer's claim or of the resume loop's
hand-off (`HANDOFF_KILL_AT`), the first time any worker of the test gets
there with a run's due step in hand (a file created exclusively decides),
once the test has armed it.

The points, in the order a timer's wake-up passes them:
- `timer.claimed`: the timer's claim script returned (members out of the
  timer set, handed on);
- `loop.taken`: the resume loop took its batch off the resume list;
- `loop.handled`: the batch's claims committed, the taken list not yet emptied.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta
from typing import Any

import webapp.workflows as wf
from webapp.workflows.dispatch import resume_loop, signals, timer_loop
from webapp.workflows.engine import heartbeat
from webapp.workflows.store import projection
from worker.run_worker import main as run_worker
from worker.tasks import _worker_app

HANDOFF = wf.workflow(
    "handoff-test", on="handoff.go", steps=[wf.wait("nap", "PT5S"), wf.ret("done")]
)


def _due_steps(raw: list[Any]) -> bool:
    """Some of these requests resume a run's own step (not a just-started run)."""
    return any(signals.parse_member(m)[2] >= 0 for m in raw)


def _die_if_first() -> None:
    """SIGKILL this process if no worker of the test died yet, once the test
    armed the kill (every run waits for its timer: no other job is in flight)."""
    marks = os.environ["HANDOFF_MARKS"]
    if not os.path.exists(marks + ".armed"):
        return
    try:
        os.close(os.open(marks + ".killed", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    with open(marks, "a") as fh:
        fh.write(f"{os.getpid()} {time.time()}\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_after_claim() -> None:
    claim = timer_loop.claim_due

    def claim_due(r: Any, now_ms: int, holder: str | None) -> tuple[int, list[str]]:
        claimed, rest = claim(r, now_ms, holder)
        if claimed:
            _die_if_first()
        return claimed, rest

    timer_loop.claim_due = claim_due  # type: ignore[assignment]


def _kill_after_take() -> None:
    pop = resume_loop.pop

    def taken(r: Any, block_s: float = resume_loop.BLOCK_S, holder: str | None = None) -> Any:
        raw = pop(r, block_s, holder)
        if _due_steps(raw):
            _die_if_first()
        return raw

    resume_loop.pop = taken  # type: ignore[assignment]


def _kill_after_handle() -> None:
    handle = resume_loop.handle

    def handled(raw: list[Any]) -> Any:
        out = handle(raw)
        if _due_steps(raw):
            _die_if_first()
        return out

    resume_loop.handle = handled  # type: ignore[assignment]


POINTS = {
    "timer.claimed": _kill_after_claim,
    "loop.taken": _kill_after_take,
    "loop.handled": _kill_after_handle,
}


def main() -> None:
    """Worker entry: a lease and a start grace of HANDOFF_LEASE_S seconds (far
    longer than the test may take: only the dead worker's hand-off being
    picked up can continue its runs; no scheduler runs, so no sweep either)."""
    heartbeat.LEASE = timedelta(seconds=float(os.environ["HANDOFF_LEASE_S"]))
    projection.START_GRACE = heartbeat.LEASE
    POINTS[os.environ["HANDOFF_KILL_AT"]]()
    _worker_app()
    wf.register(HANDOFF)
    run_worker()
