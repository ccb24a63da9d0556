"""Asking a worker for work after commit: a resume now or at a time, an
advance, a helper drain. Redis only carries "there is work": when it loses a
job, the minute sweep re-discovers it from the database."""

from __future__ import annotations

import logging
from datetime import datetime

from flask import has_app_context
from redis.exceptions import RedisError
from sqlalchemy import Connection

from webapp import clock, db
from webapp.jobs import enqueue
from webapp.redis_conn import get_redis

log = logging.getLogger("webapp.workflows")

RESUME_FUNC = "worker.workflow_tasks.resume_run"
ADVANCE_FUNC = "worker.workflow_tasks.advance"
ADVANCE_MANY_FUNC = "worker.workflow_tasks.advance_many"
DRAIN_FUNC = "worker.workflow_tasks.drain"
HELPER_KEY = "webapp:wf:drain-helper:{tenant}"
TIMER_KEY = "webapp:wf:timers"  # sorted set: "tenant|run|step" scored by wake-up ms
POKE_KEY = "webapp:wf:timers:poke"  # pushed when a wake-up is added: the timer re-plans


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
    """Hand a future wake-up to the precise timer (`webapp.workflows.timer`)."""
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


def schedule_resume(
    conn: Connection, tenant_id: str, run_id: str, step_index: int, wake_at: datetime
) -> None:
    """After commit: enqueue the resume now, or hand it to the precise timer.
    The minute sweep stays the safety net when Redis loses it."""
    due_now = wake_at <= clock.now()

    def go() -> None:
        if due_now:
            enqueue(RESUME_FUNC, tenant_id, run_id, step_index)
        else:
            add_timer(tenant_id, run_id, step_index, wake_at)

    if has_app_context():
        db.after_commit(conn, go)


def schedule_advance(conn: Connection, tenant_id: str, run_id: str) -> None:
    def go() -> None:
        enqueue(ADVANCE_FUNC, tenant_id, run_id)

    if has_app_context():
        db.after_commit(conn, go)


def schedule_advance_many(tenant_id: str, run_ids: list[str]) -> None:
    """Now (call it after commit): one job advancing these just-started runs."""
    if has_app_context():
        enqueue(ADVANCE_MANY_FUNC, tenant_id, run_ids)


def request_drain(tenant_id: str) -> None:
    enqueue(DRAIN_FUNC, tenant_id)


def request_helper(tenant_id: str) -> None:
    """Ask another worker to help with a backlog, at most twice a second: the
    redis-py lock is taken and left to expire, never released."""
    try:
        lock = get_redis().lock(HELPER_KEY.format(tenant=tenant_id), timeout=0.5)
        if not lock.acquire(blocking=False):
            return
    except RedisError:
        return
    enqueue(DRAIN_FUNC, tenant_id)
