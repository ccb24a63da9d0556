"""webapp.publish.publish and `flask events append`: a public way to publish a
domain event; it joins an open transaction or opens one, and the dispatch is
queued after the commit, never before and never on rollback."""

from __future__ import annotations

import json

import pytest
from rq import Queue

from webapp import create_app
from webapp.core import db
from webapp.eventstore import StreamId, VersionConflict, read_stream
from webapp.jobs.queue import DISPATCH_FUNC, DISPATCH_PENDING_KEY
from webapp.publish import MAX_ID, MAX_NAME, PublishError, publish


def _stream(aggregate_type: str, aggregate_id: str, tenant: str = "default") -> list:
    with db.reading() as conn:
        return read_stream(conn, StreamId(tenant, aggregate_type, aggregate_id))


def _dispatch_queued(redis) -> bool:
    return any(j.func_name == DISPATCH_FUNC for j in Queue("default", connection=redis).jobs)


def test_publish_alone_commits_and_queues_one_dispatch(app, redis):
    event = publish("order.placed", "order", "o-1", {"total": 12})
    assert [e.id for e in _stream("order", "o-1")] == [event.id]
    assert event.payload == {"total": 12} and event.version == 1
    assert _dispatch_queued(redis)


def test_publish_joins_an_open_transaction(app, redis):
    with db.transaction():
        publish("order.placed", "order", "o-2", {})
        publish("order.paid", "order", "o-2", {})
        assert _stream("order", "o-2") == []  # not committed yet
        assert not redis.exists(DISPATCH_PENDING_KEY)  # dispatch only after commit
    assert [e.type for e in _stream("order", "o-2")] == ["order.placed", "order.paid"]
    assert _dispatch_queued(redis)


def test_publish_rolls_back_with_the_transaction(app, redis):
    with pytest.raises(RuntimeError, match="boom"), db.transaction():
        publish("order.placed", "order", "o-3", {})
        raise RuntimeError("boom")
    assert _stream("order", "o-3") == []
    assert not _dispatch_queued(redis)


def test_publish_outside_an_app_context_needs_app(make_config, redis):
    other = create_app(make_config())
    with pytest.raises(RuntimeError, match="app context or pass app="):
        publish("order.placed", "order", "o-4", {})
    event = publish("order.placed", "order", "o-4", {"a": 1}, app=other)
    with other.app_context():
        assert [e.id for e in _stream("order", "o-4")] == [event.id]
        with db.transaction() as conn:  # leave the database as the fixtures expect
            conn.exec_driver_sql("DELETE FROM events WHERE aggregate_id = 'o-4'")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("", "order", "o"), {}, "event type must be a non-empty string"),
        (("order.placed", "", "o"), {}, "aggregate type"),
        (("order.placed", "order", ""), {}, "aggregate id"),
        (("order.placed", "order", "o\x00x"), {}, "aggregate id must not contain control"),
        (("order\nplaced", "order", "o"), {}, "event type must not contain control"),
        (("order.placed", "order", "o", ["x"]), {}, "payload must be a JSON object"),
        (("order.placed", "order", "o", {"t": object()}), {}, "JSON-serialisable"),
        (("order.placed", "order", "o", {"n": float("nan")}), {}, "JSON-serialisable"),
        (("order.placed", "order", "o"), {"tenant": "nope"}, "unknown tenant 'nope'"),
        (("user.email-verified", "user", "u"), {}, "belong to the product"),
        (("workflow.run-started", "thing", "u"), {}, "belong to the product"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(app, redis, args, kwargs, message):
    with pytest.raises(PublishError, match=message):
        publish(*args, **kwargs)
    with db.reading() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM events").scalar() == 0


def test_the_longest_names_publish_accepts_are_stored_on_both_backends(app, redis):
    """Every length `publish` accepts fits its column: on PostgreSQL an
    aggregate id of 101-200 characters was refused by `events.aggregate_id`
    (then 100 wide) with a DataError, after the checks had let it through."""
    long_id, long_type = "i" * MAX_ID, "t" * MAX_NAME
    event = publish("order." + "p" * (MAX_NAME - 6), long_type, long_id, {})
    assert [e.id for e in _stream(long_type, long_id)] == [event.id]
    assert event.version == 1 and event.aggregate_id == long_id
    # and one more character is refused by the checks, before anything is written
    with pytest.raises(PublishError, match=f"aggregate id must be at most {MAX_ID}"):
        publish("order.placed", "order", long_id + "i", {})
    with pytest.raises(PublishError, match=f"aggregate type must be at most {MAX_NAME}"):
        publish("order.placed", long_type + "t", "o", {})
    assert len(_stream(long_type, long_id)) == 1


def test_expected_version_makes_the_append_conditional(app):
    publish("order.placed", "order", "o-5", {}, expected_version=0)
    with pytest.raises(VersionConflict):
        publish("order.placed", "order", "o-5", {}, expected_version=0)


def test_cli_events_append(app, runner, redis):
    ok = runner.invoke(
        args=[
            "events",
            "append",
            "order.placed",
            "--aggregate",
            "order/o-9",
            "--payload",
            '{"a": 1}',
        ]
    )
    assert ok.exit_code == 0, ok.output
    (event,) = _stream("order", "o-9")
    assert event.payload == {"a": 1} and event.id in ok.output
    assert _dispatch_queued(redis)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--aggregate", "order", "--payload", "{}"], "expected TYPE/ID"),
        (["--aggregate", "/o-1", "--payload", "{}"], "expected TYPE/ID"),
        (["--aggregate", "order/", "--payload", "{}"], "expected TYPE/ID"),
        (["--aggregate", "order/1", "--payload", "{not json"], "not valid JSON"),
        (["--aggregate", "order/1", "--payload", json.dumps([1])], "must be a JSON object"),
        (["--aggregate", "order/1", "--tenant", "ghost"], "unknown tenant 'ghost'"),
    ],
)
def test_cli_events_append_bad_input(app, runner, args, message):
    res = runner.invoke(args=["events", "append", "order.placed", *args])
    assert res.exit_code != 0
    assert message in res.output
    with db.reading() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM events").scalar() == 0
