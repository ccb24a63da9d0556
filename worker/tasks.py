"""Functions the RQ worker runs (enqueued by dotted path). Each runs inside an
application context and one or more database transactions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

from flask import Flask, current_app, has_app_context

from webapp import tenants
from webapp.core import clock, db
from webapp.core.logs import log_context
from webapp.core.redis_conn import get_redis
from webapp.eventstore import projections
from webapp.jobs import queue as jobqueue
from webapp.jobs.registry import get_job
from webapp.jobs.schedule import SkipLock, fan_out
from webapp.tracing import hooks

log = logging.getLogger(__name__)
T = TypeVar("T")


@lru_cache(maxsize=1)
def _worker_app() -> Flask:
    from webapp import create_app

    return create_app()


@contextmanager
def app_context() -> Iterator[Flask]:
    if has_app_context():
        yield current_app._get_current_object()  # type: ignore[attr-defined]
        return
    app = _worker_app()
    with app.app_context():
        yield app


def in_app(fn: Callable[..., T]) -> Callable[..., T]:
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with app_context():
            if hooks.job_span is None:  # tracing off
                return fn(*args, **kwargs)
            with hooks.job_span(fn.__name__):
                return fn(*args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@in_app
def dispatch() -> dict[str, Any]:
    """Run every async projection to the head of the log."""
    # Clear the flag first: a commit after this point queues a fresh dispatch.
    get_redis().delete(jobqueue.DISPATCH_PENDING_KEY)
    cfg = current_app.config["APP_CONFIG"]
    result = projections.run_all(max_attempts=cfg.projection_max_attempts)
    if result.retry_at is not None:
        jobqueue.enqueue(jobqueue.DISPATCH_FUNC, at=result.retry_at)
    return {"applied": result.applied, "parked": result.parked}


@in_app
def cron_tick(name: str) -> int:
    """Fired by rq-scheduler for a cron job: fan out one run per tenant."""
    with db.reading() as conn:
        tenant_ids = tenants.all_ids(conn)
    return fan_out(get_redis(), name, clock.now(), tenant_ids, jobqueue.enqueue)


@in_app
def run_job(name: str, tenant_id: str | None, tick: str) -> str:
    spec = get_job(name)
    lock = SkipLock(get_redis(), spec, tenant_id)
    if spec.concurrency == "skip" and not lock.acquire():
        log.info(
            "job skipped: previous run still running", extra={"job": name, "tenant": tenant_id}
        )
        return "skipped"
    try:
        with log_context(job=name, tenant=tenant_id):
            spec.func(tenant_id, datetime.fromisoformat(tick))
        return "done"
    finally:
        if spec.concurrency == "skip":
            lock.release()
