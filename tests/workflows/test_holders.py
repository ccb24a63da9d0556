"""Liveness keys and lease takeover (`webapp.workflows.dispatch.holders`): a
lease whose holder's key is gone and that missed its renewals is taken over
before it expires, and never otherwise: not while the holder's key lives,
not while it still renews, not when Redis lost every key (flushed, restarted)
or does not answer. A holder whose lease was taken over commits nothing more.

Keys are written here as a live process's refresher leaves them (its value:
when it was created, by the injected clock), with a long expiry, so no test
depends on how fast it runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from rq import Queue
from sqlalchemy import func, select

import webapp.workflows as wf
from tests.support.workflows import only_run, types
from webapp.core import db
from webapp.eventstore import NewEvent, StreamId, append
from webapp.eventstore.tables import events
from webapp.workflows.dispatch import holders, inflight, job_paths, signals
from webapp.workflows.dispatch import timer_loop as timer
from webapp.workflows.engine import heartbeat, resume, run_loop, stops
from webapp.workflows.engine.stops import RunState, Stop
from webapp.workflows.store import leases as store_leases
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs as store_runs

ME = "checker"
counts: dict[str, int] = {}


def _count(ctx: Any, what: str) -> str:
    counts[what] = counts.get(what, 0) + 1
    return what


FLOW = wf.workflow(
    "held",
    on="held.go",
    steps=[
        wf.compute("a", lambda ctx: _count(ctx, "a")),
        wf.append_event("note", "note", lambda ctx: ctx.run_id, "held.noted", {"x": 1}),
        wf.compute("b", lambda ctx: _count(ctx, "b")),
        wf.ret(lambda ctx: ctx["b"]),
    ],
)


def _ms(clock: Any, ago: timedelta = timedelta(0)) -> str:
    return str(int((clock.now() - ago).timestamp() * 1000))


def _alive(redis: Redis, clock: Any, name: str, age: timedelta) -> None:
    """`name`'s key, created `age` ago, as its refresher keeps it."""
    redis.set(holders.key(name), _ms(clock, age), px=60_000)


@pytest.fixture
def me(app: Any, redis: Redis, clock: Any) -> Iterator[str]:
    """This process keeps a liveness key old enough to be trusted."""
    counts.clear()
    _alive(redis, clock, ME, holders.TRUST_AFTER)
    heartbeat.set_holder(ME)
    yield ME
    heartbeat.set_holder(None)


def _start(use_workflow: Any) -> str:
    """A running run nobody holds yet (as its trigger leaves it; the event is
    of a type nobody subscribes to, so no second run starts)."""
    use_workflow(FLOW)
    with db.transaction() as conn:
        thing = StreamId("default", "thing", "t1")
        trigger = append(conn, thing, [NewEvent("held.started-here", {})], 0)[0]
        run_id = ev.run_id_for(FLOW.name, None)
        started = ev.run_started(FLOW.name, trigger.type, trigger.ref, FLOW.fingerprint, None)
        append(conn, store_runs.stream("default", run_id), [NewEvent(ev.RUN_STARTED, started)], 0)
    return run_id


def _taken_by(holder: str, run_id: str) -> RunState:
    """`holder` takes the run's lease (the claim names the taking process)."""
    previous = heartbeat.holder()
    heartbeat.set_holder(holder)
    try:
        out, states = resume.take_leases("default", [run_id])
    finally:
        heartbeat.set_holder(previous)
    assert out[run_id] == "advanced"
    assert only_run("held").lease_holder == holder
    return states[0]


def _queued(redis: Redis) -> list[tuple[Any, ...]]:
    """The advance jobs queued (the trigger's projection dispatch aside)."""
    jobs = Queue("default", connection=redis).get_jobs()
    return [(j.func_name, *j.args) for j in jobs if j.func_name == job_paths.ADVANCE]


def _notes() -> int:
    with db.reading() as conn:
        q = select(func.count()).select_from(events).where(events.c.type == "held.noted")
        return int(conn.execute(q).scalar_one())


def test_refresh_keeps_the_key_and_writes_it_again_when_redis_lost_it(app, redis, clock):
    assert holders.refresh(redis, "p1") is True  # created: its value is when
    assert redis.get(holders.key("p1")) == _ms(clock).encode()
    clock.advance(1)
    assert holders.refresh(redis, "p1") is False  # still there: only its expiry moves
    assert redis.get(holders.key("p1")) == _ms(clock, timedelta(seconds=1)).encode()
    assert 0 < redis.pttl(holders.key("p1")) <= holders.TTL_MS
    redis.flushdb()
    assert holders.refresh(redis, "p1") is True
    assert redis.get(holders.key("p1")) == _ms(clock).encode()


def test_a_missing_key_counts_only_while_the_checkers_own_key_shows_no_loss(app, redis, clock):
    _alive(redis, clock, ME, timedelta(0))
    assert holders.dead(redis, ME, {"gone"}) == set()  # ours is too young: a flush just now?
    clock.advance(holders.TRUST_AFTER)
    assert holders.dead(redis, ME, {"gone"}) == {"gone"}
    _alive(redis, clock, "gone", timedelta(0))
    assert holders.dead(redis, ME, {"gone"}) == set()
    redis.flushdb()  # every key lost: ours too, so nobody counts as dead
    assert holders.dead(redis, ME, {"gone"}) == set()
    assert holders.refresh(redis, ME) is True  # our refresher writes it again...
    assert holders.dead(redis, ME, {"gone"}) == set()  # ...young: the others may not have yet
    clock.advance(holders.TRUST_AFTER)
    assert holders.dead(redis, ME, {"gone"}) == {"gone"}
    assert holders.dead(redis, ME, {ME}) == set()  # never ourselves


def test_nobody_is_dead_when_redis_does_not_answer(app, tmp_path):
    down = Redis(unix_socket_path=str(tmp_path / "no-redis.sock"), retry=Retry(NoBackoff(), 0))
    assert holders.dead(down, ME, {"gone"}) == set()


def test_a_dead_holders_run_is_taken_over_and_runs_to_its_end_once(
    me, use_workflow, work, redis, clock
):
    run_id = _start(use_workflow)
    _taken_by("doomed", run_id)  # ...which is SIGKILLed before its first step: no key, no renewal
    timer.check_leases(redis, stop=_never())
    assert _queued(redis) == []  # within its renewals: nobody takes it
    clock.advance(heartbeat.missed_after() + timedelta(milliseconds=1))
    timer.check_leases(redis, stop=_never())
    assert _queued(redis) == [(job_paths.ADVANCE, "default", run_id, "doomed")]
    timer.check_leases(redis, stop=_never())
    assert len(_queued(redis)) == 1  # once, whichever timer asks
    work()
    run = only_run("held")
    assert run.status == "completed" and run.results["return"] == "b"
    assert counts == {"a": 1, "b": 1} and _notes() == 1
    assert types(run_id).count("run-completed") == 1


def test_no_takeover_while_the_holders_key_lives(me, use_workflow, work, redis, clock):
    run_id = _start(use_workflow)
    _taken_by("busy", run_id)
    _alive(redis, clock, "busy", timedelta(seconds=10))
    clock.advance(
        heartbeat.missed_after() + timedelta(seconds=1)
    )  # its renewals missed (a long commit)
    timer.check_leases(redis, stop=_never())
    assert _queued(redis) == []
    # a takeover asked for anyway (the key came back meanwhile) is refused by the job
    assert holders.confirmed_dead(redis, "busy") == frozenset()
    out, states = resume.take_leases("default", [run_id], dead=frozenset())
    assert out[run_id] == "leased" and states == []
    assert only_run("held").lease_holder == "busy"


def test_no_takeover_while_the_holder_still_renews(me, use_workflow, redis, clock):
    """Its key lapsed (a stalled Redis connection) but its heartbeat renews:
    the database says it is alive."""
    run_id = _start(use_workflow)
    held = _taken_by("renewing", run_id)
    clock.advance(heartbeat.missed_after() + timedelta(seconds=1))
    assert store_leases.renew(
        "default", [(run_id, held.token)], heartbeat.lease_until(), "renewing"
    )
    timer.check_leases(redis, stop=_never())
    assert _queued(redis) == []
    out, _ = resume.take_leases("default", [run_id], dead=frozenset({"renewing"}))
    assert out[run_id] == "leased"


def test_no_takeover_after_redis_lost_every_key(me, use_workflow, work, redis, clock):
    """A flush takes every liveness key: the live holder's too. The checker's
    own key is gone as well, so nobody counts as dead until the keys had time
    to come back; the lease's expiry stays the fallback."""
    run_id = _start(use_workflow)
    _taken_by("alive-but-flushed", run_id)
    clock.advance(heartbeat.missed_after() + timedelta(milliseconds=1))
    redis.flushdb()
    timer.check_leases(redis, stop=_never())
    assert _queued(redis) == []
    assert holders.confirmed_dead(redis, "alive-but-flushed") == frozenset()
    assert holders.refresh(redis, ME) is True  # our refresher's next beat
    timer.check_leases(redis, stop=_never())
    assert _queued(redis) == []  # our key is young: the holder may not have written its own yet
    work()  # an advance asked for before the flush finds the holder not dead either
    assert only_run("held").lease_holder == "alive-but-flushed"
    clock.advance(heartbeat.LEASE)  # the expiry: re-dispatched the usual way
    assert timer.expired_leases() == [("default", run_id)]


def test_a_stalled_holder_commits_nothing_after_a_takeover(me, use_workflow, redis, clock):
    run_id = _start(use_workflow)
    stale = _taken_by("stalled", run_id)
    clock.advance(
        heartbeat.missed_after() + timedelta(milliseconds=1)
    )  # it stalls: no key, no renewal
    dead = holders.confirmed_dead(redis, "stalled")
    assert dead == {"stalled"}
    out, (fresh,) = resume.take_leases("default", [run_id], dead=dead)
    assert out[run_id] == "advanced" and fresh.token != stale.token
    assert only_run("held").lease_holder == ME
    # The stalled holder wakes up: its renewal, progress and finish are refused.
    assert store_leases.renew("default", [(run_id, stale.token)], heartbeat.lease_until()) == 0
    assert run_loop.execute("default", run_id, stale.token, stale) == "lost"
    finish = Stop(run_id, stale.token, "completed", [], {"step_index": 4})
    assert stops.finish_many("default", [finish]) == {run_id: "lost"}
    assert _notes() == 0 and counts == {"a": 1}  # step a ran, its progress did not commit
    assert run_loop.execute("default", run_id, fresh.token, fresh) == "completed"
    run = only_run("held")
    assert run.status == "completed" and run.results["return"] == "b"
    assert _notes() == 1 and counts == {"a": 2, "b": 1}  # only the step in flight ran twice


def test_a_dead_workers_in_flight_requests_go_back_on_the_resume_list_once(me, redis, clock):
    """What a worker was about to claim (its continuation running ahead of the
    claim: no lease in the database yet) is pushed back once it is dead."""
    asked = ["default|r1|0", "default|r2|-100"]
    heartbeat.set_holder("doomed")
    _alive(redis, clock, "doomed", timedelta(seconds=10))
    redis.sadd(holders.REGISTRY, "doomed", ME)
    with inflight.tracked(asked):
        assert redis.smembers(inflight.key("doomed")) == {a.encode() for a in asked}
        heartbeat.set_holder(ME)
        assert inflight.reap(redis, ME) == 0  # its key lives
        redis.delete(holders.key("doomed"))  # SIGKILLed: its key lapses
        assert inflight.reap(redis, ME) == 2
        assert sorted(redis.lrange(signals.RESUME_KEY, 0, -1)) == [a.encode() for a in asked]
        assert inflight.reap(redis, ME) == 0  # once, whoever reaps
        assert redis.smembers(holders.REGISTRY) == {ME.encode()}
    heartbeat.set_holder(ME)
    with inflight.tracked(["default|r3|0"]):
        assert redis.smembers(inflight.key(ME)) == {b"default|r3|0"}
    assert redis.smembers(inflight.key(ME)) == set()  # done: nothing left in flight


def test_a_dead_workers_taken_batch_goes_back_on_the_resume_list_once(me, redis, clock):
    """The resume loop takes its batch off the list into its own in the same
    Redis step: killed before the batch's claims commit, the batch is pushed
    back whole, in order, by whichever live worker reaps first."""
    _alive(redis, clock, "doomed", timedelta(seconds=10))
    redis.sadd(holders.REGISTRY, "doomed", ME)
    waiting = [f"default|r{i}|0" for i in range(3)]
    redis.rpush(signals.RESUME_KEY, *waiting)
    taken = inflight.take(redis, "doomed", batch=2, block_s=0.01)
    assert taken == [b"default|r0|0", b"default|r1|0"]
    assert redis.lrange(signals.RESUME_KEY, 0, -1) == [b"default|r2|0"]
    assert inflight.reap(redis, ME) == 0  # its key lives
    redis.delete(holders.key("doomed"))  # SIGKILLed: its key lapses
    assert inflight.reap(redis, ME) == 2
    assert redis.lrange(signals.RESUME_KEY, 0, -1) == [
        b"default|r2|0",
        b"default|r0|0",
        b"default|r1|0",
    ]
    assert inflight.reap(redis, ME) == 0  # once, whoever reaps
    assert redis.llen(inflight.taking_key("doomed")) == 0


def test_a_taken_batch_leaves_its_list_when_handled_or_given_back(me, redis, clock):
    redis.rpush(signals.RESUME_KEY, "default|r1|0", "default|r2|0")
    assert inflight.take(redis, ME, batch=1, block_s=0.01) == [b"default|r1|0"]
    redis.rpush(signals.RESUME_KEY, "default|r3|0")
    assert inflight.give_back(redis, ME) == 1  # an outage: back at the head, in order
    assert redis.lrange(signals.RESUME_KEY, 0, -1) == [
        b"default|r1|0",
        b"default|r2|0",
        b"default|r3|0",
    ]
    assert inflight.take(redis, ME, batch=10, block_s=0.01) == [
        b"default|r1|0",
        b"default|r2|0",
        b"default|r3|0",
    ]
    inflight.done(redis, ME)
    assert redis.llen(inflight.taking_key(ME)) == 0
    assert inflight.take(redis, ME, batch=10, block_s=0.01) == []  # waited, nothing came
    redis.rpush(signals.RESUME_KEY, "default|r4|0")
    assert inflight.take(redis, ME, batch=10, block_s=0.01) == [b"default|r4|0"]
    assert redis.lrange(inflight.taking_key(ME), 0, -1) == [b"default|r4|0"]


def test_the_timers_claim_hands_each_due_member_on_in_the_same_step(me, redis, clock):
    """Due members leave the timer set and reach the resume list in one script;
    those that need a job (no resume loop alive, a run's control) wait in the
    claiming worker's in-flight set, where a reaper finds them, until it has
    enqueued them."""
    now = signals.to_ms(clock.now())
    redis.zadd(
        signals.TIMER_KEY, {"default|r1|0": now - 5, "default|r2|-1": now, "x|r3|1": now + 9}
    )
    redis.set(signals.ALIVE_KEY, "1")
    assert timer.claim_due(redis, now, ME) == (2, ["default|r2|-1"])
    assert redis.zrange(signals.TIMER_KEY, 0, -1) == [b"x|r3|1"]  # not due yet
    assert redis.lrange(signals.RESUME_KEY, 0, -1) == [b"default|r1|0"]
    assert redis.smembers(inflight.key(ME)) == {b"default|r2|-1"}
    assert timer.claim_due(redis, now, ME) == (0, [])  # claimed once, whoever asks
    redis.delete(signals.ALIVE_KEY)  # no resume loop alive: an RQ job must resume it
    assert timer.claim_due(redis, now + 9, ME) == (1, ["x|r3|1"])
    assert redis.smembers(inflight.key(ME)) == {b"default|r2|-1", b"x|r3|1"}


def test_no_in_flight_request_is_pushed_back_after_redis_lost_every_key(me, redis, clock):
    redis.flushdb()
    redis.sadd(holders.REGISTRY, "alive-but-flushed")
    redis.sadd(inflight.key("alive-but-flushed"), "default|r1|0")
    assert inflight.reap(redis, ME) == 0  # our own key is gone too
    assert holders.refresh(redis, ME) is True
    assert inflight.reap(redis, ME) == 0  # ours is young: the other may not have written its own
    assert redis.llen(signals.RESUME_KEY) == 0


def _never() -> threading.Event:
    return threading.Event()
