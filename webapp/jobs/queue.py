"""Enqueueing work for the RQ worker. Redis being down never fails the caller:
the database keeps the truth and the scheduler's sweep re-discovers the work."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError
from rq import Queue

from webapp.core.redis_conn import get_redis

log = logging.getLogger(__name__)

QUEUES = ("default",)
DISPATCH_PENDING_KEY = "webapp:dispatch:pending"
DISPATCH_FUNC = "worker.tasks.dispatch"

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
    queued dispatch: the flag is set NX here and cleared when the job starts."""
    if _sink is not None:
        _sink(DISPATCH_FUNC, (), {}, None)
        return True
    try:
        r = get_redis()
        if r.set(DISPATCH_PENDING_KEY, "1", nx=True, ex=300):
            get_queue().enqueue(DISPATCH_FUNC)
        return True
    except RedisError as exc:
        log.warning(
            "dispatch not queued; the sweep will catch up",
            extra={"error_class": type(exc).__name__},
        )
        return False
