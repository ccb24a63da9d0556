"""The precise timer: fires due resumes to the millisecond and re-dispatches
runs whose lease expired (their worker died), in every worker process.

Due wake-ups live in a Redis sorted set scored by their instant in
milliseconds (`signals.schedule_resume` adds them). The timer sleeps exactly
until the earliest one (on a local event, to the millisecond), woken early
when a sooner one is added (a poke on a Redis list, which a second thread
waits on and turns into that event). Due members are claimed and handed on
in one script (`claim_due`), so of several timers exactly one resumes each,
and a timer killed at any instant has either left a member in the set or
already handed it to the resume loops (or to its in-flight set, which
another worker's timer pushes back when it is dead: `inflight`). Every `LEASE_CHECK_S` it also looks for running runs
whose lease expired, or whose holder died (`holders`: its liveness key is
gone and the lease missed its renewals), and enqueues `advance` for them;
what a dead worker was about to claim goes back on the resume list
(`inflight`).

The database stays the truth: when Redis loses the set (flushed, restarted
empty), the next lease check notices its marker is gone and rebuilds it from
the pending rows (`timer_reload`), so timers resume within about a second of
the loss; the minute sweep (`sweep`) still finds every due pending row.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from flask import Flask
from redis import Redis
from redis.exceptions import RedisError

from webapp import tenants
from webapp.core import clock, db
from webapp.core.redis_conn import get_redis
from webapp.jobs import enqueue
from webapp.workflows import host
from webapp.workflows.dispatch import holders, inflight, job_paths, signals, timer_reload
from webapp.workflows.engine import heartbeat
from webapp.workflows.store import queries

log = logging.getLogger("webapp.workflows")

LEASE_CHECK_S = 0.5
MAX_SLEEP_S = 1.0
BATCH = 200


# Claim the due members (ZREM) and hand them on in the same step: onto the
# resume list when a resume loop is alive and the step is a run's own (>= 0);
# the rest (an RQ job or a drain must be enqueued for them) into the claiming
# holder's in-flight set (KEYS[4], when ARGV[3] is '1') and returned.
# Returns {number claimed, {members to enqueue}}.
_CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #due == 0 then
  return {0, {}}
end
redis.call('ZREM', KEYS[1], unpack(due))
local alive = redis.call('EXISTS', KEYS[3]) == 1
local loop, rest = {}, {}
for _, m in ipairs(due) do
  local step = tonumber(string.match(m, '|(%-?%d+)$'))
  if alive and step ~= nil and step >= 0 then
    table.insert(loop, m)
  else
    table.insert(rest, m)
  end
end
if #loop > 0 then
  redis.call('RPUSH', KEYS[2], unpack(loop))
end
if #rest > 0 and ARGV[3] == '1' then
  redis.call('SADD', KEYS[4], unpack(rest))
end
return {#due, rest}
"""


def claim_due(r: Redis, now_ms: int, holder: str | None) -> tuple[int, list[str]]:
    """Claim every member due by `now_ms` (up to BATCH) and hand it on, in one
    script: returns how many were claimed and those still to enqueue (kept in
    `holder`'s in-flight set until `fire_due` enqueued them)."""
    in_flight = inflight.key(holder) if holder is not None else signals.TIMER_KEY
    claimed, rest = r.eval(
        _CLAIM,
        4,
        signals.TIMER_KEY,
        signals.RESUME_KEY,
        signals.ALIVE_KEY,
        in_flight,
        now_ms,
        BATCH,
        "1" if holder is not None else "0",
    )
    return int(claimed), [m.decode() if isinstance(m, bytes) else m for m in rest]


def fire_due(r: Redis, now_ms: int) -> int:
    """Resume every due member we manage to claim; returns how many."""
    holder = heartbeat.holder()
    claimed, rest = claim_due(r, now_ms, holder)
    try:
        for m in rest:
            signals.request_resume(*signals.parse_member(m))
    finally:  # enqueued, or an outage left them to the sweep: never held by a live worker
        if rest and holder is not None:
            r.srem(inflight.key(holder), *rest)
    return claimed


def lease_check(limit: int = 500) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Running runs whose lease (or start grace) has run out, as (tenant, run),
    and those whose lease only missed its renewals and names a holder, as
    (tenant, run, holder): taken over if that holder is dead (`holders`)."""
    now = clock.now()
    expired: list[tuple[str, str]] = []
    missed: list[tuple[str, str, str]] = []
    with db.reading() as conn:
        for tenant_id in tenants.all_ids(conn):
            for r in queries.unrenewed(conn, tenant_id, heartbeat.unrenewed_before(now), limit):
                if r.lease_until < now:
                    expired.append((r.tenant_id, r.run_id))
                elif r.lease_holder is not None and r.lease_token is not None:
                    missed.append((r.tenant_id, r.run_id, r.lease_holder))
    return expired, missed


def expired_leases(limit: int = 500) -> list[tuple[str, str]]:
    """Running runs whose lease (or start grace) has run out."""
    return lease_check(limit)[0]


def check_leases(r: Redis, stop: threading.Event) -> None:
    """Re-dispatch the runs whose lease expired, take over those whose holder
    died (its liveness key is gone) before their lease expires, and push the
    requests a dead worker was about to claim back onto the resume list."""
    expired, missed = lease_check()
    for tenant_id, run_id in expired:
        if stop.is_set():
            return
        redispatch(r, tenant_id, run_id)
    name = heartbeat.holder()
    if name is None:  # a process without a key of its own cannot tell who is dead
        return
    for tenant_id, run_id, holder in holders.abandoned(r, name, missed) if missed else []:
        if stop.is_set():
            return
        holders.take_over(r, tenant_id, run_id, holder)
    inflight.reap(r, name)


def redispatch(r: Redis, tenant_id: str, run_id: str) -> bool:
    """Enqueue `advance` for a run whose lease expired, at most once per LEASE
    (whichever timer asks first): a slow commit must not flood the queue."""
    key = f"webapp:wf:redispatch:{tenant_id}:{run_id}"
    if not r.lock(key, timeout=heartbeat.LEASE.total_seconds()).acquire(blocking=False):
        return False
    enqueue(job_paths.ADVANCE, tenant_id, run_id)
    return True


def next_sleep(r: Redis, now_ms: int, cap: float) -> float:
    head = r.zrange(signals.TIMER_KEY, 0, 0, withscores=True)
    if not head:
        return cap
    return max(0.0, min(cap, (float(head[0][1]) - now_ms) / 1000))


def listen_for_pokes(stop: threading.Event, poked: threading.Event) -> None:
    """Turn pokes (a sooner timer was added) into `poked`: the timer sleeps on
    that local event, to the millisecond, instead of in a blocking Redis
    command, whose timeout Redis only checks about every 100 ms."""
    while not stop.is_set():
        try:
            if get_redis().blpop([signals.POKE_KEY], timeout=MAX_SLEEP_S):
                poked.set()
        except Exception:  # an outage: the loop notices it too; poll meanwhile
            poked.set()
            stop.wait(MAX_SLEEP_S)


def loop(stop: threading.Event, poked: threading.Event | None = None) -> None:
    next_lease_check = 0.0
    outage = False
    while not stop.is_set():
        host.hooks.on_loop_turn("timer")
        try:
            r = get_redis()
            if poked is not None:
                poked.clear()
            now_ms = signals.to_ms(clock.now())
            fire_due(r, now_ms)
            if time.monotonic() >= next_lease_check:
                next_lease_check = time.monotonic() + LEASE_CHECK_S
                if timer_reload.reload_if_lost(r):
                    fire_due(r, now_ms)
                check_leases(r, stop)
            wait = next_sleep(r, now_ms, min(MAX_SLEEP_S, next_lease_check - time.monotonic()))
            if wait > 0 and poked is not None:
                poked.wait(wait)
            elif wait > 0:
                r.blpop([signals.POKE_KEY], timeout=max(wait, 0.001))
            if outage:
                log.info("workflow timer reconnected")
                outage = False
        except (RedisError, OSError, Exception) as exc:  # never die of an outage
            if not outage:
                log.warning("workflow timer: outage", extra={"error_class": type(exc).__name__})
                outage = True
            stop.wait(1.0)


def start_thread(
    app: Flask, stop: threading.Event | None = None
) -> tuple[threading.Event, threading.Thread]:
    """Run the timer in a daemon thread of this process (with an app context).
    Set the event (`stop`, or a new one) to stop it: nothing more is claimed."""
    stop = stop or threading.Event()
    poked = threading.Event()

    def listen() -> Any:
        with app.app_context():
            listen_for_pokes(stop, poked)

    listener = threading.Thread(target=listen, name="workflow-timer-pokes", daemon=True)

    def run() -> Any:
        listener.start()
        with app.app_context():
            loop(stop, poked)
        listener.join()  # within one blocking wait of the stop: joining the timer joins both

    thread = threading.Thread(target=run, name="workflow-timer", daemon=True)
    thread.start()
    return stop, thread
