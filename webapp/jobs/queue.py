"""Enqueueing work for the RQ worker. Redis being down never fails the caller:
the database keeps the truth and the scheduler's sweep re-discovers the work."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError
from rq import Queue

from webapp.redis_conn import get_redis

log = logging.getLogger(__name__)

QUEUES = ("default",)
DISPATCH_PENDING_KEY = "webapp:dispatch:pending"
DISPATCH_FUNC = "worker.tasks.dispatch"
# The workers' fast lane: a Redis list popped by a thread of every worker (the
# workflow resume loop, `webapp.workflows.dispatch.resume_loop`), without RQ's
# per-job cost. Every live loop keeps the alive key set. A projection dispatch
# rides it as `DISPATCH_MEMBER` (no "|": never a run's "tenant|run|step").
FAST_LANE_KEY = "webapp:wf:resume"
FAST_LANE_ALIVE_KEY = "webapp:wf:resume:alive"
DISPATCH_MEMBER = "dispatch"

# One round trip: set the flag; when it was not set, push onto the fast lane if
# a loop is alive (1), else tell the caller to queue the RQ job (2); 0: one is
# already on its way.
_REQUEST_DISPATCH = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', 300) then
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('RPUSH', KEYS[3], ARGV[1])
  return 1
end
return 2
"""

# (dotted path, args, kwargs, at): where jobs go instead of Redis when set.
JobSink = Callable[[str, tuple[Any, ...], dict[str, Any], datetime | None], None]
_sink: JobSink | None = None


def set_sink(sink: JobSink | None) -> JobSink | None:
    """Hand every job to `sink` instead of RQ (None: RQ again); returns the
    one before. The seam of the workflow test harness
    (`webapp.workflows.testing`), which runs the jobs itself, in-process."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def has_sink() -> bool:
    """Whether jobs go to a sink (the test harness) instead of Redis."""
    return _sink is not None


def get_queue(name: str = "default") -> Queue:
    return Queue(name, connection=get_redis())


def enqueue(
    func: str, *args: Any, job_id: str | None = None, at: datetime | None = None, **kw: Any
) -> bool:
    """Enqueue `func` (dotted path) now or at `at`; False when Redis is unreachable."""
    if _sink is not None:
        _sink(func, args, kw, at)
        return True
    try:
        if at is not None:
            from rq_scheduler import Scheduler

            Scheduler(queue_name="default", connection=get_redis()).enqueue_at(
                at, func, *args, job_id=job_id, **kw
            )
        else:
            get_queue().enqueue(func, *args, job_id=job_id, **kw)
        return True
    except RedisError as exc:
        log.warning(
            "enqueue failed; the sweep will catch up",
            extra={"func": func, "error_class": type(exc).__name__},
        )
        return False


def request_dispatch(*_: Any) -> bool:
    """Ask for one projection dispatch. A burst of commits yields at most one
    queued dispatch: the flag is set NX here and cleared when the dispatch
    starts (`webapp.jobs.dispatch.run`). It goes onto the workers' fast lane
    while a loop is alive, else it is an RQ job."""
    if _sink is not None:
        _sink(DISPATCH_FUNC, (), {}, None)
        return True
    try:
        r = get_redis()
        keys = (DISPATCH_PENDING_KEY, FAST_LANE_ALIVE_KEY, FAST_LANE_KEY)
        if r.eval(_REQUEST_DISPATCH, len(keys), *keys, DISPATCH_MEMBER) == 2:
            get_queue().enqueue(DISPATCH_FUNC)
        return True
    except RedisError as exc:
        log.warning(
            "dispatch not queued; the sweep will catch up",
            extra={"error_class": type(exc).__name__},
        )
        return False
