"""Append and read events.

Global positions are gap-free and follow commit order on every backend: each
append bumps the single `event_counter` row, and the row lock that UPDATE takes
is held until the caller's transaction ends. A transaction that got position 6
therefore commits before the one that gets 7 can even take its number, and a
rolled-back append gives its numbers back. A reader that has seen 7 never misses
a 6 that commits later.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, func, select, update
from sqlalchemy.exc import IntegrityError

from webapp import clock
from webapp.eventstore import bulk
from webapp.eventstore.records import (
    ANY,
    Event,
    Metadata,
    NewEvent,
    StreamId,
    VersionConflict,
)
from webapp.eventstore.tables import event_counter, events
from webapp.tracing import hooks

__all__ = ["ANY", "Event", "Metadata", "NewEvent", "StreamId", "VersionConflict"]

InlineProjection = Callable[[Connection, Event], None]
_inline: dict[str, list[InlineProjection]] = {}


def register_inline(event_type: str, handler: InlineProjection) -> None:
    """Run `handler` in the append's own transaction for every event of this type."""
    handlers = _inline.setdefault(event_type, [])
    if handler not in handlers:
        handlers.append(handler)


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
) -> list[Event]:
    """Append events to one stream inside the caller's transaction.

    `expected_version` is the stream's current version (0 for a new stream), or ANY.
    Raises VersionConflict when another writer got there first. On PostgreSQL a
    conflict found by the unique constraint aborts the transaction: a caller that
    wants to carry on after a conflict wraps the append in `conn.begin_nested()`.
    `dispatch=False`: the caller knows no async projection subscribes to these
    event types, so their commit need not queue a projection dispatch.
    """
    if not new_events:
        return []
    # One round trip takes the append lock (the counter row) and reads the
    # stream's version. Under READ COMMITTED the version may be read from a
    # snapshot older than the lock; then a concurrent append at our version
    # surfaces below as a unique violation, i.e. as the same VersionConflict.
    current_version = (
        select(func.coalesce(func.max(events.c.version), 0))
        .where(
            events.c.tenant_id == stream.tenant_id,
            events.c.aggregate_type == stream.aggregate_type,
            events.c.aggregate_id == stream.aggregate_id,
        )
        .scalar_subquery()
    )
    last, current = conn.execute(
        update(event_counter)
        .where(event_counter.c.id == 1)
        .values(last_position=event_counter.c.last_position + len(new_events))
        .returning(event_counter.c.last_position, current_version)
    ).one()
    if expected_version == ANY:
        # A fresh statement sees everything committed before we took the lock.
        base = stream_version(conn, stream)
    elif int(current) != expected_version:
        raise VersionConflict(stream, expected_version, int(current))
    else:
        base = expected_version
    first_position = int(last) - len(new_events) + 1
    out = _build(stream, new_events, base, first_position, meta)
    _store(conn, out, stream, expected_version, dispatch)
    return out


def append_many(
    conn: Connection,
    batch: Sequence[tuple[StreamId, Sequence[NewEvent], int]],
    meta: Metadata | None = None,
    dispatch: bool = True,
) -> list[list[Event]]:
    """Append to many streams at once: one version read, one counter bump, one
    insert. All or nothing: the first stream whose expected version does not
    hold raises VersionConflict (ANY is not accepted here). `dispatch` as in
    `append`."""
    batch = [(s, evs, v) for s, evs, v in batch if evs]
    if not batch:
        return []
    if any(v == ANY for _, _, v in batch):
        raise ValueError("append_many needs an expected version for every stream")
    total = sum(len(evs) for _, evs, _ in batch)
    last = conn.execute(
        update(event_counter)
        .where(event_counter.c.id == 1)
        .values(last_position=event_counter.c.last_position + total)
        .returning(event_counter.c.last_position)
    ).scalar_one()
    versions: dict[tuple[str, str, str], int] = {}
    for chunk_start in range(0, len(batch), 500):
        chunk = batch[chunk_start : chunk_start + 500]
        rows = conn.execute(versions_query({s.aggregate_id for s, _, _ in chunk}))
        versions.update({(r[0], r[1], r[2]): int(r[3]) for r in rows})
    for stream, _, expected in batch:
        actual = versions.get((stream.tenant_id, stream.aggregate_type, stream.aggregate_id), 0)
        if actual != expected:
            raise VersionConflict(stream, expected, actual)
    out: list[list[Event]] = []
    position = int(last) - total + 1
    for stream, new_events, expected in batch:
        out.append(_build(stream, new_events, expected, position, meta))
        position += len(new_events)
    flat = [e for stream_events in out for e in stream_events]
    _store(conn, flat, batch[0][0], batch[0][2], dispatch)
    return out


def versions_query(aggregate_ids: Iterable[str]) -> Any:
    """Current version of every stream of these aggregate ids: answered from
    the index `ix_events_stream_key`, whose leading column is aggregate_id."""
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


def _build(
    stream: StreamId,
    new_events: Sequence[NewEvent],
    base_version: int,
    first_position: int,
    meta: Metadata | None,
) -> list[Event]:
    recorded_at = clock.now()
    metadata: dict[str, Any] = (meta or Metadata()).as_dict()
    if hooks.traceparent is not None:  # tracing on: the appending span's context
        traceparent = hooks.traceparent()
        if traceparent:
            metadata["traceparent"] = traceparent
    return [
        Event(
            id=str(uuid.uuid4()),
            tenant_id=stream.tenant_id,
            aggregate_type=stream.aggregate_type,
            aggregate_id=stream.aggregate_id,
            version=base_version + i + 1,
            type=e.type,
            payload=e.payload,
            metadata=metadata,
            recorded_at=recorded_at,
            position=first_position + i,
        )
        for i, e in enumerate(new_events)
    ]


def _store(
    conn: Connection, out: list[Event], stream: StreamId, expected_version: int, dispatch: bool
) -> None:
    """Insert built events, then run the inline projections of each."""
    try:
        if len(out) > 1 and conn.dialect.name == "postgresql":
            # One statement with one parameter, whatever the batch size: the
            # server parses it once (psycopg prepares it), instead of one
            # INSERT per event.
            bulk.insert_events(conn, [_row(e) for e in out])
        else:
            conn.execute(events.insert(), [_row(e) for e in out])
    except IntegrityError as exc:
        raise VersionConflict(stream, expected_version) from exc
    if dispatch:  # after commit: one projection dispatch (webapp.db.transaction)
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


def _from_row(r: Any) -> Event:
    return Event(
        id=r.id,
        tenant_id=r.tenant_id,
        aggregate_type=r.aggregate_type,
        aggregate_id=r.aggregate_id,
        version=r.version,
        type=r.type,
        payload=r.payload,
        metadata=r.metadata,
        recorded_at=r.recorded_at,
        position=r.position,
    )


def read_stream(
    conn: Connection, stream: StreamId, after_version: int = 0, limit: int | None = None
) -> list[Event]:
    """The stream's events after `after_version`, oldest first (at most `limit`)."""
    q = (
        select(events)
        .where(
            events.c.tenant_id == stream.tenant_id,
            events.c.aggregate_type == stream.aggregate_type,
            events.c.aggregate_id == stream.aggregate_id,
            events.c.version > after_version,
        )
        .order_by(events.c.version)
    )
    return [_from_row(r) for r in conn.execute(q if limit is None else q.limit(limit))]


def read_all(
    conn: Connection,
    after_position: int = 0,
    types: Iterable[str] | None = None,
    limit: int = 500,
    tenant_id: str | None = None,
) -> list[Event]:
    """Events after a global position, in position order, optionally by type."""
    q = select(events).where(events.c.position > after_position)
    if types is not None:
        q = q.where(events.c.type.in_(list(types)))
    if tenant_id is not None:
        q = q.where(events.c.tenant_id == tenant_id)
    rows = conn.execute(q.order_by(events.c.position).limit(limit))
    return [_from_row(r) for r in rows]


def get_event(conn: Connection, event_id: str) -> Event | None:
    row = conn.execute(select(events).where(events.c.id == event_id)).first()
    return _from_row(row) if row else None


def get_events(conn: Connection, event_ids: Iterable[str]) -> dict[str, Event]:
    """Many events by id in one statement (missing ids are simply absent)."""
    ids = sorted(set(event_ids))
    out: dict[str, Event] = {}
    for start in range(0, len(ids), 500):
        rows = conn.execute(select(events).where(events.c.id.in_(ids[start : start + 500])))
        out.update((r.id, _from_row(r)) for r in rows)
    return out


def hold_append_lock(conn: Connection) -> None:
    """Take the append lock now (held until the transaction ends), as the
    first append would: for a caller that must lock rows of its own before it
    appends, in the order every appender takes them (the append lock first).
    SQLite: BEGIN IMMEDIATE already made this transaction the only writer."""
    if conn.dialect.name == "sqlite":
        return
    conn.execute(
        update(event_counter)
        .where(event_counter.c.id == 1)
        .values(last_position=event_counter.c.last_position)
    )


def head_position(conn: Connection) -> int:
    value = conn.execute(
        select(event_counter.c.last_position).where(event_counter.c.id == 1)
    ).scalar()
    return int(value or 0)
