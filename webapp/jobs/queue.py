"""Enqueueing work for the RQ worker. Redis being down never fails the caller:
the database keeps the truth and the scheduler's sweep re-discovers the work."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError
from rq import Queue

from webapp.redis_conn import get_redis

log = logging.getLogger(__name__)

QUEUES = ("default",)
DISPATCH_PENDING_KEY = "webapp:dispatch:pending"
DISPATCH_FUNC = "worker.tasks.dispatch"


def get_queue(name: str = "default") -> Queue:
    return Queue(name, connection=get_redis())


def enqueue(
    func: str, *args: Any, job_id: str | None = None, at: datetime | None = None, **kw: Any
) -> bool:
    """Enqueue `func` (dotted path) now or at `at`; False when Redis is unreachable."""
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
