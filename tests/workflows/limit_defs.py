"""Limited workflows for the concurrency tests; real worker subprocesses load
`RACE` too (`main`)."""

from __future__ import annotations

import time
from datetime import timedelta

import webapp.workflows as wf
from webapp.workflows.definition.model import RunContext


def customer(event):
    return event.payload["customerId"]


def urgency(event):
    return int(event.payload.get("priority", 3))


def limited(max_: int = 2, keyed: bool = True, name: str = "sync") -> wf.Workflow:
    return wf.workflow(
        name,
        on="sync.requested",
        awaits={"done": "sync.done"},
        concurrency=wf.limit(max=max_, key=customer if keyed else None),
        priority=urgency,
        steps=[
            wf.wait_for_event(
                "finished",
                event="done",
                timeout="P1D",
                match=lambda ctx: wf.match.eq("n", ctx.trigger.payload["n"]),
            ),
            wf.ret(lambda ctx: ctx.trigger.payload["n"]),
        ],
    )


def busy(ctx: RunContext) -> int:
    time.sleep(0.005)  # long enough for the workers' runs to overlap
    return int(ctx.trigger.payload["n"])


RACE = wf.workflow(
    "race",
    on="race.requested",
    concurrency=wf.limit(max=3, key=customer),
    steps=[wf.compute("work", busy), wf.wait("breath", timedelta(0)), wf.compute("more", busy)],
)


def main() -> None:
    """Worker entry for the subprocess: register RACE, run the worker."""
    from worker.run_worker import main as run_worker
    from worker.tasks import _worker_app

    _worker_app()
    wf.register(RACE)
    run_worker()
