"""The precise timer: due wake-ups fire from Redis to the millisecond (the
injected clock decides what is due), each exactly once across timers, and
runs whose lease ran out are re-dispatched."""

from __future__ import annotations

from datetime import timedelta

import webapp.workflows as wf
from tests.support.workflows import emit, only_run
from webapp.core import db
from webapp.workflows.dispatch import signals as timers
from webapp.workflows.dispatch import timer_loop as timer
from webapp.workflows.engine import heartbeat as leases
from webapp.workflows.store.tables import workflow_runs


def _now_ms(clock) -> int:
    return timers.to_ms(clock.now())


def test_a_wait_fires_when_due_and_only_once(use_workflow, work, clock, redis):
    use_workflow(wf.workflow("timed", on="timed.go", steps=[wf.wait("nap", "PT5S"), wf.ret(1)]))
    emit("timed.go", {})
    work()
    run = only_run("timed")
    assert run.status == "suspended"
    assert redis.zcard(timers.TIMER_KEY) == 1
    clock.advance(4.999)
    assert timer.fire_due(redis, _now_ms(clock)) == 0  # not yet due
    clock.advance(0.001)
    assert timer.fire_due(redis, _now_ms(clock)) == 1
    assert timer.fire_due(redis, _now_ms(clock)) == 0  # claimed once, whoever asks
    work()
    assert only_run("timed").status == "completed"


def test_next_sleep_is_until_the_earliest_wake_up(app, clock, redis):
    now = clock.now()
    timers.add_timer("default", "r1", 0, now + timedelta(seconds=3))
    timers.add_timer("default", "r2", 0, now + timedelta(milliseconds=250))
    assert timer.next_sleep(redis, _now_ms(clock), cap=1.0) == 0.25
    assert timer.next_sleep(redis, _now_ms(clock), cap=0.1) == 0.1


def test_a_run_whose_lease_ran_out_is_found_for_re_dispatch(use_workflow, work, clock):
    use_workflow(
        wf.workflow("leased", on="leased.go", steps=[wf.compute("c", lambda c: 1), wf.ret(1)])
    )
    emit("leased.go", {})
    work()
    run = only_run("leased")
    with db.transaction() as conn:  # as a worker killed mid-step leaves it
        conn.execute(
            workflow_runs.update()
            .where(workflow_runs.c.run_id == run.run_id)
            .values(status="running", lease_token="dead", lease_until=leases.lease_until())
        )
    assert timer.expired_leases() == []
    clock.advance(leases.LEASE.total_seconds() + 0.001)
    assert timer.expired_leases() == [("default", run.run_id)]


def test_an_expired_lease_is_re_dispatched_once_per_lease(app, redis):
    assert timer.redispatch(redis, "default", "r1") is True
    assert timer.redispatch(redis, "default", "r1") is False  # the other timer, or the next check
    assert timer.redispatch(redis, "default", "r2") is True
