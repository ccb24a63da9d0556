"""Positions drawn by concurrent writers (PostgreSQL): a reader, whether
`safe_position` or an async projection, never moves past a position whose
writer is still in flight, never skips it once it commits, and never waits
forever on one that rolled back. And a single-event publish is one
statement and the commit."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from sqlalchemy import event

from webapp.core import db
from webapp.eventstore import NewEvent, StreamId, append, projections, read_stream, safe_position
from webapp.publish import publish


@pytest.fixture
def postgres(backend):
    if backend != "postgresql":
        pytest.skip("concurrent writers: SQLite has one writer at a time")


def stream() -> StreamId:
    return StreamId("default", "thing", str(uuid.uuid4()))


def commit_later(rollback: bool = False):
    """A writer that appends one event and holds its transaction open until
    released, then commits (or rolls back). Returns (release, thread, drawn)."""
    drawn: list[int] = []
    ready, release = threading.Event(), threading.Event()

    class Boom(Exception):
        pass

    def run() -> None:
        try:
            with db.transaction() as conn:
                drawn.append(append(conn, stream(), [NewEvent("held.one")], 0)[0].position)
                ready.set()
                release.wait(30)
                if rollback:
                    raise Boom
        except Boom:
            pass

    t = threading.Thread(target=run)
    t.start()
    assert ready.wait(10)
    return release, t, drawn[0]


def write_after(n: int) -> list[int]:
    out = []
    for _ in range(n):
        with db.transaction() as conn:
            out.append(append(conn, stream(), [NewEvent("held.later")], 0)[0].position)
    return out


def test_a_transaction_holding_a_low_position_holds_every_reader_back(app, postgres):
    applied: list[int] = []
    p = projections.register(
        "test-held-open", {"held.one", "held.later"}, lambda conn, e: applied.append(e.position)
    )
    try:
        projections.run_projection(p)  # the cursor starts behind everything below
        applied.clear()
        release, writer, held = commit_later()
        later = write_after(20)
        assert min(later) > held
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # the writer holds its position for 2 s
            projections.run_projection(p)
            with db.reading() as conn:
                assert safe_position(conn) < held
            assert applied == []
        release.set()
        writer.join()
        projections.run_projection(p)
        # Once it commits: the held event first, then every later one, once each.
        assert applied == [held, *later]
        with db.reading() as conn:
            assert safe_position(conn) >= max(later)
    finally:
        projections.unregister("test-held-open")


def test_a_rolled_back_position_holds_readers_only_until_its_writer_ends(app, postgres):
    release, writer, held = commit_later(rollback=True)
    later = write_after(5)
    with db.reading() as conn:
        assert safe_position(conn) < held  # in flight: it may still commit
    release.set()
    writer.join()
    safe = 0
    for _ in range(100):  # each call waits at most a few milliseconds
        with db.reading() as conn:
            safe = safe_position(conn)
        if safe >= max(later):
            break
    assert safe >= max(later)


def test_a_single_event_publish_is_one_statement_that_commits_itself(app, postgres):
    statements: list[str] = []
    engine = db.get_engine()

    def on_statement(conn, cursor, statement, params, context, executemany):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        with app.app_context():
            e = publish("order.paid", "order", str(uuid.uuid4()), {"amount": 1})
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
    assert e.version == 1
    # No BEGIN, no COMMIT: the driver autocommits the one INSERT.
    assert len(statements) == 1, statements
    assert statements[0].lstrip().startswith("WITH cur AS")
    with db.reading() as conn:
        assert [x.id for x in read_stream(conn, e.stream)] == [e.id]


def test_a_publish_inside_a_transaction_commits_with_it(app, postgres):
    s = str(uuid.uuid4())
    with pytest.raises(RuntimeError), db.transaction():
        publish("order.paid", "order", s, {"amount": 1})
        raise RuntimeError("boom")
    with db.reading() as conn:
        assert read_stream(conn, StreamId("default", "order", s)) == []
