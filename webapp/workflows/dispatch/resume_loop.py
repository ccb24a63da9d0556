"""The resume loop: resume-run without RQ, in a thread of every worker.

A step due now (an awaited event woke it, its timer fired, a look-back found
its event) is pushed as "tenant|run|step" onto a Redis list
(`signals.request_resume`). Each worker's loop pops it (with whatever else is
waiting, up to `BATCH`), validates it like every resume-run entry (rule 1),
claims the due rows of a tenant in one transaction (`resume.resume_many`:
rules 2-7, the same claim as the job's) and finishes the quick continuations
together. A continuation that needs commits of its own (a mail, a webhook,
a wait for an event ...) is handed to RQ under the lease the claim took
(`continue-run`), so one slow run never holds up the next resume. A run
that just started (a queued run whose slot freed, a child) comes the same way
("tenant|run|-100"): its lease is taken as the advance job would.

Nothing here is the truth: a request lost with Redis is a due pending row
that the minute sweep drains. A worker takes its batch off the list into a
list of its own in one Redis step (`inflight.take`), and empties that list
only once the batch's claims committed; should it die in between (it may be
running the continuation ahead of the claim), another worker's timer pushes
the batch back onto the list once the dead worker's liveness key is gone
(`inflight.reap`). An outage while handling a batch puts the batch back on
the list (a second claim of a step already resumed answers already-resumed).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from flask import Flask
from redis import Redis

from webapp.core.redis_conn import get_redis
from webapp.workflows import host
from webapp.workflows.dispatch import inflight, signals
from webapp.workflows.engine import heartbeat, resume, transient

log = logging.getLogger("webapp.workflows")

BATCH = 100
BLOCK_S = 1.0  # longest wait for a request; also how often the loop says it is alive
NAMED_POLL_S = 0.01  # at start, how often to look whether the liveness key exists yet


def pop(r: Redis, block_s: float = BLOCK_S, holder: str | None = None) -> list[Any]:
    """The requests waiting, oldest first (up to BATCH); when there are none,
    wait up to `block_s` for the next one and return it alone at once. With
    a `holder` (a worker's liveness name), they are in its taking list in the
    same step (`inflight.take`) until `inflight.done`."""
    if holder is not None:
        return inflight.take(r, holder, BATCH, block_s)
    pipe = r.pipeline(transaction=True)
    pipe.lrange(signals.RESUME_KEY, 0, BATCH - 1)
    pipe.ltrim(signals.RESUME_KEY, BATCH, -1)
    waiting, _ = pipe.execute()
    if waiting:
        return list(waiting)
    first = r.blpop([signals.RESUME_KEY], timeout=block_s)
    return [] if first is None else [first[1]]


def handle(raw: list[Any]) -> dict[tuple[str, str, int], str]:
    """Resume what the requests ask for, one claim transaction per tenant
    (`resume.resume_requests`: a request that fails rule 1 is logged
    and dropped)."""
    requests = []
    advances: dict[str, list[str]] = {}
    controls: set[str] = set()
    for item in raw:
        try:
            tenant_id, run_id, step = signals.parse_member(item)
        except ValueError as exc:
            log.warning("resume request refused", extra={"error": str(exc)})
            continue
        if step == signals.ADVANCE_STEP:  # just started: lease it and run it
            advances.setdefault(tenant_id, []).append(run_id)
        elif step < 0:  # a run's control, pushed back from a dead worker: a drain claims it
            controls.add(tenant_id)
        else:
            requests.append((tenant_id, run_id, step))
    for tenant_id in sorted(controls):
        signals.request_drain(tenant_id)
    for tenant_id, run_ids in advances.items():
        resume.advance_many(tenant_id, run_ids, handoff=signals.request_continue)
    return resume.resume_requests(requests, handoff=signals.request_continue)


def give_back(r: Redis, raw: list[Any], holder: str | None = None) -> None:
    """Put requests back at the head of the list (an outage or a stop
    interrupted them): the holder's taking list, else `raw`."""
    try:
        if holder is not None:
            inflight.give_back(r, holder)
        elif raw:
            r.lpush(signals.RESUME_KEY, *reversed(raw))
    except Exception as exc:  # Redis is gone too: the sweep finds the due rows
        log.warning("resume requests dropped", extra={"error_class": type(exc).__name__})


def loop(stop: threading.Event, holder: str | None = None) -> None:
    """Take and handle batches until `stop`. With a `holder` (the worker's
    liveness name, `holders.start`), every batch is taken into its taking list,
    and nothing is taken before its liveness key exists: a dead worker is
    only found, and its batch pushed back, through that key."""
    while holder is not None and heartbeat.holder() != holder and not stop.is_set():
        host.hooks.on_loop_turn("resume")
        _say_alive()  # requests wait on the list for this loop, not as RQ jobs beside it
        stop.wait(NAMED_POLL_S)
    alive_until = 0.0
    outage = False
    while not stop.is_set():
        host.hooks.on_loop_turn("resume")
        raw: list[Any] = []
        r = get_redis()
        try:
            if time.monotonic() >= alive_until:
                r.set(signals.ALIVE_KEY, "1", px=signals.LOOP_ALIVE_MS)
                alive_until = time.monotonic() + BLOCK_S
            raw = pop(r, holder=holder)
            if stop.is_set():  # stopped while we waited: leave these to another worker
                give_back(r, raw, holder)
                break
            if raw:
                handle(raw)
                if holder is not None:
                    inflight.done(r, holder)
            if outage:
                log.info("workflow resume loop reconnected")
                outage = False
        except Exception as exc:  # never die of an outage (or of one bad batch)
            if not transient.is_infrastructure(exc):
                log.exception("resume batch failed; the sweep will retry its rows")
                if holder is not None:
                    _forget(r, holder)
                continue
            give_back(r, raw, holder)
            if not outage:
                log.warning(
                    "workflow resume loop: outage", extra={"error_class": type(exc).__name__}
                )
                outage = True
            stop.wait(1.0)


def _say_alive() -> None:
    try:
        get_redis().set(signals.ALIVE_KEY, "1", px=signals.LOOP_ALIVE_MS)
    except Exception as exc:  # an outage: the loop notices it once it runs
        log.debug("resume loop not announced", extra={"error_class": type(exc).__name__})


def _forget(r: Redis, holder: str) -> None:
    """Drop a failed batch from the taking list (its due rows stay for the sweep)."""
    try:
        inflight.done(r, holder)
    except Exception as exc:  # Redis is gone: the batch is taken again with the next one
        log.warning("failed batch kept", extra={"error_class": type(exc).__name__})


def start_thread(
    app: Flask, stop: threading.Event | None = None, holder: str | None = None
) -> tuple[threading.Event, threading.Thread]:
    """Run the loop in a daemon thread of this process (with an app context),
    taking for `holder` when given (`loop`). Set the event (`stop`, or a new
    one) to stop it: the batch in hand is finished, nothing more is claimed."""
    stop = stop or threading.Event()

    def run() -> Any:
        with app.app_context():
            loop(stop, holder)

    thread = threading.Thread(target=run, name="workflow-resume-loop", daemon=True)
    thread.start()
    return stop, thread
