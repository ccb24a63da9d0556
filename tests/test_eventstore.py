"""Event store: append with expected version, reads, positions in append
order that a reader up to the safe position never skips (gap-free on
SQLite; on PostgreSQL a rolled-back append leaves a hole readers pass).
The held-open and rolled-back writers are in test_eventstore_positions.py."""

from __future__ import annotations

import threading
import uuid

import pytest

from webapp.core import db
from webapp.eventstore import (
    ANY,
    NewEvent,
    StreamId,
    VersionConflict,
    append,
    read_all,
    read_stream,
    safe_position,
)


def stream(agg_id: str | None = None) -> StreamId:
    return StreamId("default", "thing", agg_id or str(uuid.uuid4()))


def test_append_and_read_stream_in_version_order(app):
    s = stream()
    with db.transaction() as conn:
        out = append(
            conn, s, [NewEvent("thing.made", {"n": 1}), NewEvent("thing.named", {"n": 2})], 0
        )
    assert [e.version for e in out] == [1, 2]
    with db.reading() as conn:
        evs = read_stream(conn, s)
    assert [(e.type, e.version, e.payload) for e in evs] == [
        ("thing.made", 1, {"n": 1}),
        ("thing.named", 2, {"n": 2}),
    ]
    assert evs[0].recorded_at.tzinfo is not None
    assert evs[0].metadata == {"actor": None, "correlation_id": None, "causation_id": None}


def test_wrong_expected_version_raises_and_appends_nothing(app):
    s = stream()
    with db.transaction() as conn:
        append(conn, s, [NewEvent("thing.made")], 0)
    with pytest.raises(VersionConflict), db.transaction() as conn:
        append(conn, s, [NewEvent("thing.named")], 0)
    with db.reading() as conn:
        assert [e.version for e in read_stream(conn, s)] == [1]
        assert [e.type for e in read_all(conn)] == ["thing.made"]


def test_two_appends_with_same_expected_version_one_wins(app):
    s = stream()
    with db.transaction() as conn:
        append(conn, s, [NewEvent("thing.made")], 0)
    results: list[str] = []
    barrier = threading.Barrier(2)

    def writer(label: str) -> None:
        barrier.wait()
        try:
            with db.transaction() as conn:
                append(conn, s, [NewEvent("thing.named", {"by": label})], 1)
            results.append("ok")
        except VersionConflict:
            results.append("conflict")

    threads = [threading.Thread(target=writer, args=(x,)) for x in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict", "ok"]
    with db.reading() as conn:
        evs = read_stream(conn, s)
    assert [e.version for e in evs] == [1, 2]


def test_any_expected_version_appends_at_the_end(app):
    s = stream()
    with db.transaction() as conn:
        append(conn, s, [NewEvent("a")], 0)
        append(conn, s, [NewEvent("b")], ANY)
    with db.reading() as conn:
        assert [(e.type, e.version) for e in read_stream(conn, s)] == [("a", 1), ("b", 2)]


def test_read_all_filters_by_type_and_position(app):
    with db.transaction() as conn:
        x1, y, x2 = (
            e.position
            for e in append(conn, stream(), [NewEvent("x"), NewEvent("y"), NewEvent("x")], 0)
        )
    assert x1 < y < x2
    with db.reading() as conn:
        assert [e.position for e in read_all(conn, 0, ["x"])] == [x1, x2]
        assert [e.position for e in read_all(conn, x1)] == [y, x2]
        assert [e.position for e in read_all(conn, 0, upto=y)] == [x1, y]


def test_a_rolled_back_append_is_never_read_and_readers_pass_its_position(app, backend):
    with pytest.raises(RuntimeError), db.transaction() as conn:
        x = append(conn, stream(), [NewEvent("x")], 0)[0].position
        raise RuntimeError("boom")
    with db.transaction() as conn:
        y = append(conn, stream(), [NewEvent("y")], 0)[0].position
    # SQLite numbers inside its one write transaction: the number comes back.
    # PostgreSQL's sequence does not give it back: a hole, which readers pass.
    assert y == x if backend == "sqlite" else y > x
    with db.reading() as conn:
        assert [(e.type, e.position) for e in read_all(conn)] == [("y", y)]
    # Readers pass the hole once every transaction running when they saw it
    # has ended (other tests' too): within moments, never stuck.
    safe = 0
    for _ in range(400):
        with db.reading() as conn:
            safe = safe_position(conn)
        if safe >= y:
            break
    assert safe == y


def test_eight_concurrent_writers_and_a_reader_at_the_safe_position_sees_each_once(app, backend):
    writers, per_writer = 8, 250
    seen: list[int] = []
    top = [0]
    done = threading.Event()
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            s = stream()
            for v in range(per_writer):
                with db.transaction() as conn:
                    append(conn, s, [NewEvent("load.tick", {"w": n, "v": v})], v)
        except BaseException as exc:  # surfaced by the assert below
            errors.append(exc)

    def tail() -> None:
        position = 0
        while True:
            finished = done.is_set()
            with db.reading() as conn:
                safe = safe_position(conn)
                batch = read_all(conn, position, limit=1000, upto=safe)
            for e in batch:
                seen.append(e.position)
                position = e.position
            if finished and not batch and safe >= top[0]:
                return

    reader = threading.Thread(target=tail)
    reader.start()
    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.reading() as conn:
        top[0] = max(e.position for e in read_all(conn, limit=10_000))
    done.set()
    reader.join()
    assert errors == []
    total = writers * per_writer
    with db.reading() as conn:
        positions = [e.position for e in read_all(conn, limit=total + 10)]
    assert len(positions) == total
    if backend == "sqlite":  # one writer at a time: gap-free
        assert positions == list(range(positions[0], positions[0] + total))
    # The reader tailed while writers committed out of order: it saw every
    # event exactly once, in position order.
    assert seen == positions


def test_append_many_appends_to_several_streams_with_consecutive_positions(app):
    from webapp.eventstore import append_many

    a, b = stream(), stream()
    with db.transaction() as conn:
        append(conn, a, [NewEvent("x")], 0)
        out = append_many(conn, [(a, [NewEvent("y")], 1), (b, [NewEvent("z"), NewEvent("w")], 0)])
    first = out[0][0].position
    assert [[(e.version, e.position - first) for e in evs] for evs in out] == [
        [(2, 0)],
        [(1, 1), (2, 2)],
    ]
    with db.reading() as conn:
        assert [e.type for e in read_stream(conn, a)] == ["x", "y"]
        assert [e.type for e in read_stream(conn, b)] == ["z", "w"]


def test_append_many_is_all_or_nothing_on_a_version_conflict(app):
    from webapp.eventstore import append_many

    a, b = stream(), stream()
    with db.transaction() as conn:
        append(conn, a, [NewEvent("x")], 0)
    with pytest.raises(VersionConflict), db.transaction() as conn:
        append_many(conn, [(b, [NewEvent("y")], 0), (a, [NewEvent("y")], 0)])
    with db.reading() as conn:
        assert read_stream(conn, b) == []
        assert [e.type for e in read_all(conn)] == ["x"]


def test_append_many_reads_stream_versions_through_the_stream_key_index(app, backend):
    """The version read of append_many names only aggregate ids: the stream's
    unique index, whose leading column is aggregate_id (migration 0018),
    answers it, no full scan."""
    from sqlalchemy import text

    from webapp.eventstore.store import versions_query

    stmt = versions_query(["a1", "a2"])
    with db.transaction() as conn:
        compiled = stmt.compile(conn, compile_kwargs={"literal_binds": True})
        if backend == "postgresql":
            # A tiny table is cheapest to scan (or to read in index order); forbid
            # both to see which index can answer `aggregate_id IN (...)` itself.
            for setting in ("enable_seqscan", "enable_indexscan", "enable_indexonlyscan"):
                conn.execute(text(f"SET LOCAL {setting} = off"))
            plan = "\n".join(r[0] for r in conn.execute(text(f"EXPLAIN {compiled}")))
        else:
            plan = "\n".join(
                str(r[-1]) for r in conn.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))
            )
    if backend == "postgresql":
        assert "uq_events_stream_version" in plan, plan
    else:  # the constraint's own index, named by SQLite
        assert "SEARCH events USING COVERING INDEX sqlite_autoindex_events_" in plan, plan
        assert "(aggregate_id=?)" in plan, plan
