"""Batched and singleton workflows for the process tests; the real worker
subprocesses load them too (`main`).

HANGING's key function hangs, in the first process that reaches it, on the
event whose payload says `hang` (a file created exclusively decides which
process is first): the test SIGKILLs that worker there, in the middle of a
trigger batch whose earlier events it has already collected."""

from __future__ import annotations

import os
import time

import webapp.workflows as wf
from worker.run_worker import main as run_worker
from worker.tasks import _worker_app

WITHIN_S = 2


def post(event):
    return event.payload["postId"]


def _hang_once(event):
    if event.payload.get("hang"):
        marks = os.environ["BATCHING_MARKS"]
        try:
            os.close(os.open(marks + ".hung", os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return event.payload["postId"]
        with open(marks, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        while True:  # until the test SIGKILLs this process
            time.sleep(60)
    return event.payload["postId"]


def _numbers(ctx):
    return [int(e.payload["n"]) for e in ctx.trigger_batch]


BATCHED = wf.workflow(
    "batched",
    on="comment.posted",
    batch=wf.collect(max=8, within=f"PT{WITHIN_S}S", key=post),
    steps=[wf.ret(_numbers)],
)

HANGING = wf.workflow(
    "batched-hanging",
    on="note.posted",
    batch=wf.collect(max=8, within=f"PT{WITHIN_S}S", key=_hang_once),
    steps=[wf.ret(_numbers)],
)


def _slow(ctx):
    time.sleep(0.02)
    return int(ctx.trigger.payload["n"])


REPLACED = wf.workflow(
    "singleton-race",
    on="sync.requested",
    singleton=wf.one(key=lambda e: e.payload["accountId"], mode="replace"),
    steps=[wf.compute("n", _slow), wf.wait("settle", "PT0.2S"), wf.ret(lambda ctx: ctx["n"])],
)


def main() -> None:
    """Worker entry for the subprocess: register them, run the worker."""
    _worker_app()
    for definition in (BATCHED, HANGING, REPLACED):
        wf.register(definition)
    run_worker()
