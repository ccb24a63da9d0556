"""Job registry, rq-scheduler registration, cron ticks, per-tenant fan-out, `skip`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rq import Queue
from rq_scheduler import Scheduler

from webapp import tenants
from webapp.core import db
from webapp.jobs.queue import enqueue
from webapp.jobs.registry import JobSpec, get_job, register_job, unregister_job
from webapp.jobs.schedule import SkipLock, fan_out, sync_schedule
from worker import tasks

calls: list[tuple[str | None, datetime]] = []


def record(tenant_id: str | None, tick: datetime) -> None:
    calls.append((tenant_id, tick))


@pytest.fixture
def recorded_job():  # type: ignore[no-untyped-def]
    calls.clear()
    spec = register_job(JobSpec("test-record", record, cron="*/5 * * * *"))
    yield spec
    unregister_job("test-record")


def _cron_entries(scheduler: Scheduler, job_id: str) -> list:  # type: ignore[type-arg]
    return [j for j in scheduler.get_jobs() if j.id == job_id]


def test_cron_job_registered_twice_exists_once(app, redis, recorded_job):
    first = sync_schedule(Scheduler(queue_name="default", connection=redis))
    # The scheduler restarts: a new process syncs again.
    second = sync_schedule(Scheduler(queue_name="default", connection=redis))
    assert first["cron-test-record"] == "added"
    assert second["cron-test-record"] == "kept"
    scheduler = Scheduler(queue_name="default", connection=redis)
    (entry,) = _cron_entries(scheduler, "cron-test-record")
    assert entry.meta["cron_string"] == "*/5 * * * *"
    assert len(_cron_entries(scheduler, "interval-dispatch-sweep")) == 1


def test_changed_schedule_replaces_the_entry_and_removed_jobs_go(app, redis, recorded_job):
    sync_schedule(Scheduler(queue_name="default", connection=redis))
    register_job(JobSpec("test-record", record, cron="0 * * * *"))
    actions = sync_schedule(Scheduler(queue_name="default", connection=redis))
    assert actions["cron-test-record"] == "replaced"
    (entry,) = _cron_entries(Scheduler(queue_name="default", connection=redis), "cron-test-record")
    assert entry.meta["cron_string"] == "0 * * * *"
    unregister_job("test-record")
    actions = sync_schedule(Scheduler(queue_name="default", connection=redis))
    assert actions["cron-test-record"] == "removed"
    assert (
        _cron_entries(Scheduler(queue_name="default", connection=redis), "cron-test-record") == []
    )


def test_a_tick_fans_out_per_tenant_and_fires_once_even_with_two_schedulers(
    app, redis, recorded_job, work
):
    with db.transaction() as conn:
        tenants.create(conn, "Acme Corp")
    at = datetime(2026, 1, 1, 12, 5, 30, tzinfo=UTC)
    ids = ["acme-corp", "default"]
    assert fan_out(redis, "test-record", at, ids, enqueue) == 2
    assert fan_out(redis, "test-record", at, ids, enqueue) == 0  # second scheduler, same tick
    assert Queue("default", connection=redis).count == 2
    work()
    tick = datetime(2026, 1, 1, 12, 5, tzinfo=UTC)
    assert sorted(calls, key=lambda c: str(c[0])) == [("acme-corp", tick), ("default", tick)]


def test_cron_tick_task_reads_tenants_from_the_database(app, redis, recorded_job, clock, work):
    clock.set(datetime(2026, 3, 1, 8, 0, 10, tzinfo=UTC))
    Queue("default", connection=redis).enqueue("worker.tasks.cron_tick", "test-record")
    work()
    assert calls == [("default", datetime(2026, 3, 1, 8, 0, tzinfo=UTC))]


def test_skip_policy_drops_a_tick_while_the_previous_run_still_runs(app, redis, recorded_job):
    held = SkipLock(redis, get_job("test-record"), "default")
    assert held.acquire()
    assert tasks.run_job("test-record", "default", "2026-01-01T00:00:00+00:00") == "skipped"
    assert calls == []
    held.release()
    assert tasks.run_job("test-record", "default", "2026-01-01T00:00:00+00:00") == "done"
    assert len(calls) == 1
    # The lock is released after the run: the next tick runs too.
    assert tasks.run_job("test-record", "default", "2026-01-01T00:05:00+00:00") == "done"


def test_invalid_cron_and_names_are_rejected():
    with pytest.raises(ValueError, match="invalid cron"):
        register_job(JobSpec("bad-cron", record, cron="every minute"))
    with pytest.raises(ValueError, match="letters, digits"):
        register_job(JobSpec("bad name!", record))


def test_tenants_cli_creates_and_rejects_duplicates(app, runner):
    res = runner.invoke(args=["tenants", "create", "Blue Shop"])
    assert res.exit_code == 0 and "blue-shop" in res.output
    res = runner.invoke(args=["tenants", "create", "Blue Shop"])
    assert res.exit_code != 0 and "already exists" in res.output
    res = runner.invoke(args=["tenants", "create", "!!!"])
    assert res.exit_code != 0
    assert runner.invoke(args=["tenants", "list"]).output.split() == ["blue-shop", "default"]
