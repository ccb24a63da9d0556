"""Read events: one stream in version order, the whole log in position order
(up to a bound, e.g. the safe position), single events by id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, select

from webapp.eventstore import positions
from webapp.eventstore.records import Event, StreamId
from webapp.eventstore.tables import events


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
    upto: int | None = None,
) -> list[Event]:
    """Events after a global position (and at most `upto`), in position
    order, optionally by type. A reader that must not skip one that commits
    later reads only up to the safe position (`positions.safe_position`)."""
    q = select(events).where(events.c.position > after_position)
    if upto is not None:
        q = q.where(events.c.position <= upto)
    if types is not None:
        q = q.where(events.c.type.in_(list(types)))
    if tenant_id is not None:
        q = q.where(events.c.tenant_id == tenant_id)
    rows = conn.execute(q.order_by(events.c.position).limit(limit))
    return [_from_row(r) for r in rows]


def event_at(conn: Connection, position: int) -> Event | None:
    """The event at a global position (None for a hole): one probe of the
    primary key. (`read_all(after, limit=1, tenant_id=...)` asks the same
    but lets SQLite's planner, which has no statistics, pick the stream
    index by its tenant and sort the tenant's whole history.)"""
    row = conn.execute(select(events).where(events.c.position == position)).first()
    return _from_row(row) if row else None


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


def head_position(conn: Connection) -> int:
    """The safe position: where a reader that must not skip an event may read to."""
    return positions.safe_position(conn)
