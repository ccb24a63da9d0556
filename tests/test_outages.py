"""No background process dies of an outage (real worker and scheduler processes,
a private redis-server, PostgreSQL behind a TCP relay we can cut):

- Redis FLUSHALL: the scheduler writes its entries back by itself and every
  suspended run resumes, without restarting anything;
- Redis stopped for 10 s and started empty: both processes are still alive and
  every run (also those triggered during the outage) completes;
- PostgreSQL unreachable for a few seconds: the same.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from redis import Redis
from sqlalchemy import select
from sqlalchemy.engine import make_url

from tests import procs
from webapp.core import db
from webapp.eventstore import projections
from webapp.jobs.schedule import SWEEP_ID
from webapp.publish import publish
from webapp.workflows.store.tables import workflow_runs

MODULE = "tests.workflows.outage_flows"
SCHEDULE_KEY = "rq:scheduler:scheduled_jobs"
RESUME_ENTRY = "cron-resume-due-runs"


def statuses() -> Counter[str]:
    with db.reading() as conn:
        rows = conn.execute(
            select(workflow_runs.c.status).where(workflow_runs.c.workflow_name == "outage-nap")
        )
        return Counter(r.status for r in rows)


def all_completed(n: int) -> bool:
    c = statuses()
    return c["completed"] == n and sum(c.values()) == n


def trigger(prefix: str, n: int) -> None:
    for i in range(n):
        publish("outage.requested", "thing", f"{prefix}{i}", {})


def mounted() -> bool:
    with db.reading() as conn:
        return any(r["name"] == "workflow-outage-nap" for r in projections.status(conn))


class Stack:
    """A worker and a scheduler (real processes) on a private Redis."""

    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.worker = procs.worker(env, tmp / "worker.log")
        self.scheduler = procs.scheduler(env, tmp / "scheduler.log")

    def alive(self) -> bool:
        return self.worker.alive() and self.scheduler.alive()

    def stop(self) -> None:
        self.worker.stop()
        self.scheduler.stop()

    def logs(self) -> str:
        return f"--- worker\n{self.worker.output()}\n--- scheduler\n{self.scheduler.output()}"


def start_stack(env: dict[str, str], tmp: Path, r: Redis) -> Stack:
    stack = Stack(env, tmp)
    procs.until(mounted, what="trigger cursor mounted by the worker")
    procs.until(lambda: r.zscore(SCHEDULE_KEY, RESUME_ENTRY), what="schedule written")
    return stack


def test_flushall_schedule_comes_back_and_suspended_runs_resume(private, database_url, tmp_path):
    server, r = private
    env = procs.app_env(
        database_url,
        server.url,
        tmp_path / "instance",
        WORKFLOW_MODULES=MODULE,
        SCHEDULER_RESYNC_SECONDS="3",
    )
    stack = start_stack(env, tmp_path, r)
    try:
        trigger("f", 4)
        procs.until(lambda: statuses()["suspended"] == 4, what="runs suspended on their timer")
        r.flushall()  # their resume jobs, the cron entries and the sweep are gone
        procs.until(
            lambda: r.zscore(SCHEDULE_KEY, RESUME_ENTRY) and r.zscore(SCHEDULE_KEY, SWEEP_ID),
            timeout=60,
            what="schedule restored",
        )
        procs.until(lambda: all_completed(4), timeout=120, what="runs resumed after FLUSHALL")
        assert stack.alive(), stack.logs()
        assert "schedule entries were missing from Redis; restored" in stack.scheduler.output()
    finally:
        stack.stop()


def test_redis_stopped_for_10s_and_started_empty(private, database_url, tmp_path):
    server, r = private
    env = procs.app_env(
        database_url,
        server.url,
        tmp_path / "instance",
        WORKFLOW_MODULES=MODULE,
        SCHEDULER_RESYNC_SECONDS="3",
    )
    stack = start_stack(env, tmp_path, r)
    try:
        trigger("a", 3)
        server.stop()
        trigger("b", 3)  # the application keeps accepting work: the database has it
        time.sleep(10)  # the outage
        assert stack.alive(), stack.logs()
        server.start()  # empty
        procs.until(lambda: all_completed(6), timeout=150, what="every run completed")
        assert stack.alive(), stack.logs()
        out = stack.scheduler.output()
        assert out.count("Redis unavailable; retrying with backoff") == 1, out
        assert "Redis available again" in out
    finally:
        stack.stop()


def test_postgresql_unreachable_for_a_while(private, database_url, tmp_path, backend):
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: SQLite is a local file and has no outage")
    server, r = private
    url = make_url(database_url)
    relay = procs.TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    relay.start()
    via_relay = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    env = procs.app_env(via_relay, server.url, tmp_path / "instance", WORKFLOW_MODULES=MODULE)
    stack = start_stack(env, tmp_path, r)
    try:
        trigger("p", 3)
        procs.until(lambda: sum(statuses().values()) >= 1, what="first run started")
        relay.stop()  # PostgreSQL is gone for the worker and the scheduler
        trigger("q", 3)  # committed directly: the web side still reaches the database
        time.sleep(6)  # the outage
        assert stack.alive(), stack.logs()
        relay.start()
        procs.until(lambda: all_completed(6), timeout=150, what="every run completed")
        assert stack.alive(), stack.logs()
    finally:
        stack.stop()
        relay.stop()
