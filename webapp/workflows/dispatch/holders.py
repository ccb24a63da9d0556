"""Liveness keys: telling a dead lease holder from a slow one in about two
seconds instead of a lease's six.

Every worker process keeps a key in Redis, `webapp:wf:alive:<name>`, with a
`TTL` of 2 s, refreshed every `REFRESH_S` by a thread of its own (`start`);
the leases it takes or renews record the name as their holder
(`heartbeat.set_holder`). A SIGKILLed process stops refreshing, and its key
is gone within `TTL`. The timer's lease check then takes over a lease whose
holder's key is gone and that missed its renewals (`abandoned`, and
`resume.abandoned` again under the row's lock), without waiting for
the lease to expire.

A missing key is trusted only while Redis shows it has not lost keys: the
checker reads its own key in the same MGET, and its value is the instant it
was (re)created. Redis flushed or restarted empty: the checker's own key is
gone too (or younger than `TRUST_AFTER`, the time every live process needs to
write its key again), and nobody counts as dead. Redis unreachable: nobody
counts as dead either. The lease expiry stays the fallback, so the database
stays the truth; Redis only makes a dead holder's runs continue sooner.

A takeover writes a new lease token. A holder that was only stalled (a long
pause, its key lapsed and its renewals missed) finds, at its next commit or
renewal, that its token is no longer the row's: it commits nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable
from datetime import timedelta

from flask import Flask
from redis import Redis
from redis.exceptions import RedisError

from webapp.core import clock
from webapp.core.redis_conn import get_redis
from webapp.jobs import enqueue
from webapp.workflows.dispatch import job_paths
from webapp.workflows.engine import heartbeat

log = logging.getLogger("webapp.workflows")

PREFIX = "webapp:wf:alive:"
REGISTRY = "webapp:wf:holders"  # the names of the processes that keep a key (a set)
TTL_MS = 2000
REFRESH_S = 0.5
# A missing key counts only once the checker's own key has existed this long:
# a whole TTL (every live process has refreshed its key since any flush) and
# a refresh more.
TRUST_AFTER = timedelta(milliseconds=TTL_MS, seconds=REFRESH_S)


def key(name: str) -> str:
    return PREFIX + name


def new_name() -> str:
    """A process's holder name: its pid (for people) and a random part (pids recur)."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:16]}"


def refresh(r: Redis, name: str) -> bool:
    """Keep our key alive for another TTL; True when it had been lost (Redis
    flushed or restarted, or we stalled past the TTL) and was created again,
    with the instant of its creation as its value (and our name put back in
    the REGISTRY, which `inflight` reads)."""
    if r.pexpire(key(name), TTL_MS):
        return False
    pipe = r.pipeline(transaction=True)
    pipe.set(key(name), str(_ms()), px=TTL_MS)
    pipe.sadd(REGISTRY, name)
    pipe.execute()
    return True


def dead(r: Redis, name: str, holders: Iterable[str]) -> set[str]:
    """Which of `holders` have no key, as checked by the process `name`: none
    at all unless its own key (read in the same MGET) is at least TRUST_AFTER
    old, and none when Redis does not answer."""
    others = sorted(set(holders) - {name})
    if not others:
        return set()
    try:
        own, *values = r.mget([key(name), *(key(h) for h in others)])
    except RedisError:
        return set()
    if own is None or _ms() - int(own) < TRUST_AFTER.total_seconds() * 1000:
        return set()
    return {h for h, v in zip(others, values, strict=True) if v is None}


def abandoned(
    r: Redis, name: str, suspects: list[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """The (tenant, run, holder) suspects (leases that missed their renewals)
    whose holder is dead."""
    gone = dead(r, name, {h for _, _, h in suspects})
    return [s for s in suspects if s[2] in gone]


def take_over(r: Redis, tenant_id: str, run_id: str, holder: str) -> bool:
    """Enqueue `advance` for a run whose holder died, once per
    `heartbeat.missed_after()` (whichever timer asks first); the job checks
    the holder again (`confirmed_dead`)."""
    lock = f"webapp:wf:takeover:{tenant_id}:{run_id}"
    if not r.lock(lock, timeout=heartbeat.missed_after().total_seconds()).acquire(blocking=False):
        return False
    log.info("lease holder gone: run taken over", extra={"run_id": run_id, "holder": holder})
    enqueue(job_paths.ADVANCE, tenant_id, run_id, holder)
    return True


def confirmed_dead(r: Redis, holder: str | None) -> frozenset[str]:
    """{holder} when this process still finds it dead, else nothing."""
    name = heartbeat.holder()
    if holder is None or name is None:
        return frozenset()
    return frozenset(dead(r, name, {holder}))


def _ms() -> int:
    return int(clock.now().timestamp() * 1000)


def keep_alive(stop: threading.Event, name: str) -> None:
    """Refresh our key every REFRESH_S. Our leases name us as their holder
    once the key exists, and no longer once we stop (the key is deleted then,
    or lapses if the process dies): a stop waits until no lease is held, so a
    job in hand at the signal keeps its key until it is done."""
    named = False
    while not (stop.is_set() and not heartbeat.held_leases()):
        try:
            refresh(get_redis(), name)
            if not named:
                heartbeat.set_holder(name)
                named = True
        except (RedisError, OSError) as exc:  # an outage: nobody reads the key either
            log.debug("liveness key not refreshed", extra={"error_class": type(exc).__name__})
        if stop.is_set():
            time.sleep(REFRESH_S)  # stopping: until the job in hand lets its leases go
        else:
            stop.wait(REFRESH_S)
    heartbeat.set_holder(None)
    with contextlib.suppress(RedisError, OSError):
        pipe = get_redis().pipeline(transaction=True)
        pipe.srem(REGISTRY, name)
        pipe.delete(key(name))
        pipe.execute()


def start(app: Flask, stop: threading.Event) -> tuple[str, threading.Thread]:
    """Keep this process's liveness key in a daemon thread until `stop` is
    set and no lease is held. Returns the process's holder name."""
    name = new_name()

    def run() -> None:
        with app.app_context():
            keep_alive(stop, name)

    thread = threading.Thread(target=run, name="workflow-liveness", daemon=True)
    thread.start()
    return name, thread
