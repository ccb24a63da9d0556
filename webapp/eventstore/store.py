"""Append events.

Global positions follow the order events were appended in, and a reader
never misses one that commits after it has read further (`reads`, up to the
safe position of `positions`):

- PostgreSQL draws them from a sequence in the insert itself, so writers
  never wait for each other's commits. A single-event append is one
  statement (the stream's version check, and for a publish the tenant's, are
  part of it) and the commit. A rolled-back append leaves a hole, which
  readers skip once its writer has ended.
- SQLite numbers them from the `event_counter` row inside its single write
  transaction: gap-free and in commit order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, func, select, text, update
from sqlalchemy.exc import IntegrityError

from webapp.core import clock
from webapp.core.driver_writes import DriverWrite
from webapp.eventstore import bulk
from webapp.eventstore.records import (
    ANY,
    Event,
    Metadata,
    NewEvent,
    StreamId,
    UnknownTenant,
    VersionConflict,
)
from webapp.eventstore.tables import event_counter, events, tenants
from webapp.tracing import hooks

__all__ = ["ANY", "Event", "Metadata", "NewEvent", "StreamId", "VersionConflict"]

InlineProjection = Callable[[Connection, Event], None]
_inline: dict[str, list[InlineProjection]] = {}
# An ANY append that lost the race for its version tries again this often.
ANY_ATTEMPTS = 20
# A single-event append that commits by itself goes on the driver's cursor.
_APPEND_ONE = DriverWrite(bulk.APPEND_ONE)


def register_inline(event_type: str, handler: InlineProjection) -> None:
    """Run `handler` in the append's own transaction for every event of this type."""
    handlers = _inline.setdefault(event_type, [])
    if handler not in handlers:
        handlers.append(handler)


def has_inline(event_type: str) -> bool:
    """Whether an inline projection reads this event type."""
    return bool(_inline.get(event_type))


def stream_version(conn: Connection, stream: StreamId) -> int:
    value = conn.execute(
        select(func.max(events.c.version)).where(
            events.c.tenant_id == stream.tenant_id,
            events.c.aggregate_type == stream.aggregate_type,
            events.c.aggregate_id == stream.aggregate_id,
        )
    ).scalar()
    return int(value or 0)


def append(
    conn: Connection,
    stream: StreamId,
    new_events: Sequence[NewEvent],
    expected_version: int,
    meta: Metadata | None = None,
    dispatch: bool = True,
    check_tenant: bool = False,
) -> list[Event]:
    """Append events to one stream inside the caller's transaction.

    `expected_version` is the stream's current version (0 for a new stream), or ANY.
    Raises VersionConflict when another writer got there first. A single
    event's conflict leaves the transaction usable; on PostgreSQL a conflict
    of several events found by the unique constraint aborts it (a caller that
    wants to carry on wraps the append in `conn.begin_nested()`).
    `dispatch=False`: the caller knows no async projection subscribes to these
    event types, so their commit need not queue a projection dispatch.
    `check_tenant`: raise UnknownTenant unless the stream's tenant exists.
    """
    if not new_events:
        return []
    rows = _rows(new_events, meta)
    if conn.dialect.name == "postgresql":
        out = _append_drawn(conn, stream, rows, expected_version, check_tenant)
    else:
        out = _append_counted(conn, stream, rows, expected_version, check_tenant)
    _store(conn, out, dispatch)
    return out


def _append_drawn(
    conn: Connection, stream: StreamId, rows: list[dict[str, Any]], expected: int, check: bool
) -> list[Event]:
    params = {
        "tenant_id": stream.tenant_id,
        "aggregate_type": stream.aggregate_type,
        "aggregate_id": stream.aggregate_id,
        "expected": expected,
        "check_tenant": check,
    }
    if len(rows) == 1:
        params.update(bulk.one_row(rows[0]))
    else:
        params.update(n=len(rows), rows=bulk.encode_rows(rows))
    for _ in range(ANY_ATTEMPTS):
        if len(rows) == 1:  # ON CONFLICT DO NOTHING: a lost race returns no row
            found = _APPEND_ONE.all(conn, params)
            got: dict[str, Any] = {rows[0]["id"]: found[0] if found else None}
        else:
            got = _insert_stream(conn, stream, params)
        if all(got.values()):
            return [_event(stream, r, int(got[r["id"]][0]), int(got[r["id"]][1])) for r in rows]
        if check and not _tenant_exists(conn, stream.tenant_id):
            raise UnknownTenant(stream.tenant_id)
        if expected != ANY:
            raise VersionConflict(stream, expected, stream_version(conn, stream))
        # ANY lost the race for its version: the next statement sees the winner.
    raise VersionConflict(stream, expected)


def _insert_stream(conn: Connection, stream: StreamId, params: dict[str, Any]) -> dict[str, Any]:
    """Several events of one stream: all or none (an ANY append retries in a
    savepoint, so a lost race leaves the transaction usable)."""
    try:
        if params["expected"] != ANY:
            found = conn.execute(bulk.APPEND_STREAM, params).all()
        else:
            with conn.begin_nested():
                found = conn.execute(bulk.APPEND_STREAM, params).all()
    except IntegrityError as exc:
        if params["expected"] != ANY:
            raise VersionConflict(stream, params["expected"]) from exc
        return {"": None}
    return {r.id: (r.position, r.version) for r in found} or {"": None}


def _append_counted(
    conn: Connection, stream: StreamId, rows: list[dict[str, Any]], expected: int, check: bool
) -> list[Event]:
    """SQLite: BEGIN IMMEDIATE made this the only writer; the counter row numbers."""
    if check and not _tenant_exists(conn, stream.tenant_id):
        raise UnknownTenant(stream.tenant_id)
    current = stream_version(conn, stream)
    if expected != ANY and current != expected:
        raise VersionConflict(stream, expected, current)
    last = _bump_counter(conn, len(rows))
    first = last - len(rows) + 1
    out = [_event(stream, r, first + i, current + i + 1) for i, r in enumerate(rows)]
    try:
        conn.execute(events.insert(), [_row(e) for e in out])
    except IntegrityError as exc:
        raise VersionConflict(stream, expected) from exc
    return out


def _bump_counter(conn: Connection, n: int) -> int:
    return int(
        conn.execute(
            update(event_counter)
            .where(event_counter.c.id == 1)
            .values(last_position=event_counter.c.last_position + n)
            .returning(event_counter.c.last_position)
        ).scalar_one()
    )


def _tenant_exists(conn: Connection, tenant_id: str) -> bool:
    return conn.execute(select(tenants.c.id).where(tenants.c.id == tenant_id)).first() is not None


def append_many(
    conn: Connection,
    batch: Sequence[tuple[StreamId, Sequence[NewEvent], int]],
    meta: Metadata | None = None,
    dispatch: bool = True,
) -> list[list[Event]]:
    """Append to many streams at once: one version read, one insert. All or
    nothing: the first stream whose expected version does not hold raises
    VersionConflict (ANY is not accepted here). `dispatch` as in `append`."""
    batch = [(s, evs, v) for s, evs, v in batch if evs]
    if not batch:
        return []
    if any(v == ANY for _, _, v in batch):
        raise ValueError("append_many needs an expected version for every stream")
    versions: dict[tuple[str, str, str], int] = {}
    for chunk_start in range(0, len(batch), 500):
        chunk = batch[chunk_start : chunk_start + 500]
        found = conn.execute(versions_query({s.aggregate_id for s, _, _ in chunk}))
        versions.update({(r[0], r[1], r[2]): int(r[3]) for r in found})
    for stream, _, expected in batch:
        actual = versions.get((stream.tenant_id, stream.aggregate_type, stream.aggregate_id), 0)
        if actual != expected:
            raise VersionConflict(stream, expected, actual)
    rows = [(stream, expected, _rows(evs, meta)) for stream, evs, expected in batch]
    total = sum(len(r) for _, _, r in rows)
    try:
        if conn.dialect.name == "postgresql":
            out = _insert_many_drawn(conn, rows, total)
        else:
            out = _insert_many_counted(conn, rows, total)
    except IntegrityError as exc:
        raise VersionConflict(batch[0][0], batch[0][2]) from exc
    _store(conn, [e for stream_events in out for e in stream_events], dispatch)
    return out


Rows = list[tuple[StreamId, int, list[dict[str, Any]]]]


def _insert_many_drawn(conn: Connection, rows: Rows, total: int) -> list[list[Event]]:
    flat = [
        {
            **r,
            "tenant_id": s.tenant_id,
            "aggregate_type": s.aggregate_type,
            "aggregate_id": s.aggregate_id,
            "version": expected + i + 1,
        }
        for s, expected, stream_rows in rows
        for i, r in enumerate(stream_rows)
    ]
    found = conn.execute(bulk.INSERT_MANY, {"n": total, "rows": bulk.encode_rows(flat)})
    position = {r.id: int(r.position) for r in found}
    return [
        [_event(s, r, position[r["id"]], expected + i + 1) for i, r in enumerate(stream_rows)]
        for s, expected, stream_rows in rows
    ]


def _insert_many_counted(conn: Connection, rows: Rows, total: int) -> list[list[Event]]:
    position = _bump_counter(conn, total) - total + 1
    out: list[list[Event]] = []
    for s, expected, stream_rows in rows:
        out.append(
            [_event(s, r, position + i, expected + i + 1) for i, r in enumerate(stream_rows)]
        )
        position += len(stream_rows)
    conn.execute(events.insert(), [_row(e) for stream_events in out for e in stream_events])
    return out


def versions_query(aggregate_ids: Iterable[str]) -> Any:
    """Current version of every stream of these aggregate ids: answered from
    the unique index `uq_events_stream_version`, whose leading column is
    aggregate_id (migration 0018)."""
    return (
        select(
            events.c.tenant_id,
            events.c.aggregate_type,
            events.c.aggregate_id,
            func.max(events.c.version),
        )
        .where(events.c.aggregate_id.in_(sorted(set(aggregate_ids))))
        .group_by(events.c.tenant_id, events.c.aggregate_type, events.c.aggregate_id)
    )


def _rows(new_events: Sequence[NewEvent], meta: Metadata | None) -> list[dict[str, Any]]:
    """The parts of each new event that do not depend on where it lands."""
    recorded_at = clock.now()
    metadata: dict[str, Any] = (meta or Metadata()).as_dict()
    if hooks.traceparent is not None:  # tracing on: the appending span's context
        traceparent = hooks.traceparent()
        if traceparent:
            metadata["traceparent"] = traceparent
    return [
        {
            "id": str(uuid.uuid4()),
            "type": e.type,
            "payload": e.payload,
            "metadata": metadata,
            "recorded_at": recorded_at,
        }
        for e in new_events
    ]


def _event(stream: StreamId, r: dict[str, Any], position: int, version: int) -> Event:
    return Event(
        id=r["id"],
        tenant_id=stream.tenant_id,
        aggregate_type=stream.aggregate_type,
        aggregate_id=stream.aggregate_id,
        version=version,
        type=r["type"],
        payload=r["payload"],
        metadata=r["metadata"],
        recorded_at=r["recorded_at"],
        position=position,
    )


def _store(conn: Connection, out: list[Event], dispatch: bool) -> None:
    """After the insert: count the events for the after-commit dispatch, then
    run the inline projections of each."""
    if dispatch:  # after commit: one projection dispatch (webapp.core.db.transaction)
        conn.info["events_appended"] = conn.info.get("events_appended", 0) + len(out)
    for e in out:
        for handler in _inline.get(e.type, ()):
            handler(conn, e)


def _row(e: Event) -> dict[str, Any]:
    return {
        "position": e.position,
        "id": e.id,
        "tenant_id": e.tenant_id,
        "aggregate_type": e.aggregate_type,
        "aggregate_id": e.aggregate_id,
        "version": e.version,
        "type": e.type,
        "payload": e.payload,
        "metadata": e.metadata,
        "recorded_at": e.recorded_at,
    }


_ADVISORY_APPEND_LOCK = text("SELECT pg_advisory_xact_lock(7308613001)")


def hold_append_lock(conn: Connection) -> None:
    """Take the ordering lock (held until the transaction ends), for writers
    that must decide one at a time across processes (slot admissions and
    refills, rate decisions, cron ticks). Plain appends do not take it.
    SQLite: BEGIN IMMEDIATE already made this transaction the only writer."""
    if conn.dialect.name == "sqlite":
        return
    conn.execute(_ADVISORY_APPEND_LOCK)
