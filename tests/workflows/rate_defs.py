"""Throttled and debounced workflows for the process tests; the real worker
subprocesses load them too (`main`)."""

from __future__ import annotations

import webapp.workflows as wf
from worker.run_worker import main as run_worker
from worker.tasks import _worker_app


def customer(event):
    return event.payload["customerId"]


THROTTLED = wf.workflow(
    "throttled",
    on="export.requested",
    throttle=wf.rate(5, per="PT2S", key=customer),
    steps=[wf.compute("n", lambda ctx: int(ctx.trigger.payload["n"]))],
)

DEBOUNCED = wf.workflow(
    "debounced",
    on="document.edited",
    debounce=wf.quiet("PT3S", key=customer, max_wait="PT1M"),
    steps=[wf.ret(lambda ctx: int(ctx.trigger.payload["n"]))],
)


def main() -> None:
    """Worker entry for the subprocess: register both, run the worker."""
    _worker_app()
    wf.register(THROTTLED)
    wf.register(DEBOUNCED)
    run_worker()
