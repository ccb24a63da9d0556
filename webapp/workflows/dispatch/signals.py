"""The after-commit signal to Redis: asking a worker for work once the
database holds it: a resume now or at a time, an advance, a helper drain. Redis only carries "there is work": when it loses a
job, the minute sweep re-discovers it from the database.

A resume due now goes to the resume loop of the workers (`resumer`): one
RPUSH onto a Redis list, popped by a thread in every worker that claims it at
once, without RQ's per-job cost and without waiting behind other jobs. Only
while no resume loop has shown itself alive within `LOOP_ALIVE_MS` (no worker
running, or a plain RQ worker as in tests) is it an RQ `resume-run` job."""

from __future__ import annotations

import logging
from datetime import datetime

from flask import has_app_context
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy import Connection

from webapp.core import clock, db
from webapp.core.redis_conn import get_redis
from webapp.jobs import enqueue, has_sink
from webapp.workflows.dispatch import job_paths
from webapp.workflows.engine import transient
from webapp.workflows.store import start_signal, wake_signal

log = logging.getLogger("webapp.workflows")

HELPER_KEY = "webapp:wf:drain-helper:{tenant}"
TIMER_KEY = "webapp:wf:timers"  # sorted set: "tenant|run|step" scored by wake-up ms
POKE_KEY = "webapp:wf:timers:poke"  # pushed when a wake-up is added: the timer re-plans
RESUME_KEY = "webapp:wf:resume"  # list of "tenant|run|step" due now, for the resume loops
ALIVE_KEY = "webapp:wf:resume:alive"  # set (with an expiry) by every live resume loop
LOOP_ALIVE_MS = 5000
# A resume-loop request for a run that just started (no pending row): lease it
# and run it (`advance`), as the advance job would.
ADVANCE_STEP = -100

# One round trip: push for the resume loops if one is alive, else tell the caller.
_PUSH_IF_ALIVE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RPUSH', KEYS[2], unpack(ARGV))
  return 1
end
return 0
"""


def to_ms(at: datetime) -> int:
    """An instant as whole milliseconds since the epoch (the sorted set's score)."""
    return round(at.timestamp() * 1000)


def member(tenant_id: str, run_id: str, step_index: int) -> str:
    return f"{tenant_id}|{run_id}|{step_index}"


def parse_member(raw: bytes | str) -> tuple[str, str, int]:
    text = raw.decode() if isinstance(raw, bytes) else raw
    tenant_id, run_id, step = text.rsplit("|", 2)
    return tenant_id, run_id, int(step)


def add_timer(tenant_id: str, run_id: str, step_index: int, wake_at: datetime) -> None:
    """Hand a future wake-up to the precise timer (`webapp.workflows.dispatch.timer_loop`)."""
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.zadd(TIMER_KEY, {member(tenant_id, run_id, step_index): to_ms(wake_at)})
        pipe.lpush(POKE_KEY, "1")
        pipe.ltrim(POKE_KEY, 0, 0)
        pipe.execute()
    except RedisError as exc:
        log.warning(
            "timer not set; the sweep will catch up", extra={"error_class": type(exc).__name__}
        )


def request_resume(tenant_id: str, run_id: str, step_index: int) -> None:
    """Now (call it after commit): resume this due step, through the resume
    loops when one is alive, else as an RQ resume-run job. A run's control
    (a deadline, a cancel-on event: below step 0) is claimed by a drain."""
    if step_index < 0:
        request_drain(tenant_id)
        return
    try:
        r = get_redis()
        if r.eval(_PUSH_IF_ALIVE, 2, ALIVE_KEY, RESUME_KEY, member(tenant_id, run_id, step_index)):
            return
    except RedisError as exc:
        log.warning(
            "resume not queued; the sweep will catch up", extra={"error_class": type(exc).__name__}
        )
        return
    enqueue(job_paths.RESUME_RUN, tenant_id, run_id, step_index)


def on_wake(tenant_id: str, run_id: str, step_index: int, wake_at: datetime) -> None:
    """The store's wake-up listener (after commit): resume now, or hand the
    wake-up to the precise timer. The minute sweep stays the safety net when
    Redis loses it."""
    if not has_app_context():
        return
    if wake_at <= clock.now():
        request_resume(tenant_id, run_id, step_index)
    else:
        add_timer(tenant_id, run_id, step_index, wake_at)


def on_start(tenant_id: str, run_ids: list[str]) -> None:
    """The store's start listener (after commit): queued runs just started
    (their slot freed, a child) are advanced by a worker: through the resume
    loops when one is alive (no job queue in between), else an RQ job."""
    if not has_app_context() or not run_ids:
        return
    if has_sink():  # the test harness runs the jobs itself: no resume loop, no Redis
        schedule_advance_many(tenant_id, run_ids)
        return
    members = [member(tenant_id, run_id, ADVANCE_STEP) for run_id in run_ids]
    try:
        if get_redis().eval(_PUSH_IF_ALIVE, 2, ALIVE_KEY, RESUME_KEY, *members):
            return
    except RedisError as exc:
        log.warning(
            "advance not pushed; queued as a job", extra={"error_class": type(exc).__name__}
        )
    schedule_advance_many(tenant_id, run_ids)


def install() -> None:
    """Wire the store's wake-ups and starts to Redis (the app factory does it)."""
    wake_signal.listen(on_wake)
    start_signal.listen(on_start)


# A Redis connection error inside a step is transient: retried in place, never
# the step's failure (whoever imports the dispatch layer talks to Redis).
transient.register_transient(RedisConnectionError, RedisTimeoutError)


def request_continue(tenant_id: str, run_id: str, token: str) -> None:
    """Now: continue a run whose lease `token` was just taken, in an RQ job.
    Lost, the lease expires and the timer re-dispatches the run (`advance`)."""
    enqueue(job_paths.CONTINUE_RUN, tenant_id, run_id, token)


def schedule_advance(conn: Connection, tenant_id: str, run_id: str) -> None:
    def go() -> None:
        enqueue(job_paths.ADVANCE, tenant_id, run_id)

    if has_app_context():
        db.after_commit(conn, go)


def schedule_advance_many(tenant_id: str, run_ids: list[str]) -> None:
    """Now (call it after commit): one job advancing these just-started runs."""
    if has_app_context():
        enqueue(job_paths.ADVANCE_MANY, tenant_id, run_ids)


def request_drain(tenant_id: str) -> None:
    enqueue(job_paths.DRAIN, tenant_id)


def request_helper(tenant_id: str) -> None:
    """Ask another worker to help with a backlog, at most twice a second: the
    redis-py lock is taken and left to expire, never released."""
    try:
        lock = get_redis().lock(HELPER_KEY.format(tenant=tenant_id), timeout=0.5)
        if not lock.acquire(blocking=False):
            return
    except RedisError:
        return
    enqueue(job_paths.DRAIN, tenant_id)
