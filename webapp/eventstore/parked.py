"""Parked events: what an async projection gave up on after its attempts
(`projections.run_projection` parks them), and the operator's two actions on
one, Retry and Skip, each recorded as an event with its actor."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection, delete, select, update

from webapp.core import db
from webapp.eventstore.projections import get
from webapp.eventstore.reads import get_event
from webapp.eventstore.store import ANY, Metadata, NewEvent, StreamId, append
from webapp.eventstore.tables import parked_events

log = logging.getLogger("webapp.eventstore.projections")


def list_parked(conn: Connection) -> list[Any]:
    return list(conn.execute(select(parked_events).order_by(parked_events.c.id)))


# Operator actions on parked events are events too (actor in the metadata), on
# the projection's own stream in the default tenant (projections span tenants).
PARKED_RETRIED = "projection.parked-event-retried"
PARKED_SKIPPED = "projection.parked-event-skipped"
OPERATIONS_TENANT = "default"


def _record(conn: Connection, type_: str, row: Any, actor: str | None, **extra: Any) -> None:
    payload = {"parkedId": row.id, "projection": row.projection, "eventId": row.event_id, **extra}
    stream = StreamId(OPERATIONS_TENANT, "projection", row.projection)
    append(conn, stream, [NewEvent(type_, payload)], ANY, Metadata(actor=actor))


def _parked_row(conn: Connection, parked_id: int) -> Any:
    q = select(parked_events).where(parked_events.c.id == parked_id)
    if not db.is_sqlite(conn):
        q = q.with_for_update()  # two operators pressing Retry: one applies it
    row = conn.execute(q).first()
    if row is None:
        raise LookupError(f"no parked event with id {parked_id}")
    return row


def retry_parked(parked_id: int, actor: str | None = None) -> bool:
    """Apply one parked event again; on success the parked row goes away.
    Either way the attempt is recorded as an event with `actor`."""
    with db.transaction() as conn:
        row = _parked_row(conn, parked_id)
        p = get(row.projection)
        event = get_event(conn, row.event_id)
        if event is None:
            raise LookupError(f"event {row.event_id} no longer exists")
        try:
            with conn.begin_nested():
                p.apply(conn, event)
        except Exception as exc:
            conn.execute(
                update(parked_events)
                .where(parked_events.c.id == parked_id)
                .values(attempts=row.attempts + 1, error_class=type(exc).__name__)
            )
            log.warning("parked event failed again", extra={"parked_id": parked_id}, exc_info=True)
            _record(conn, PARKED_RETRIED, row, actor, applied=False)
            return False
        conn.execute(delete(parked_events).where(parked_events.c.id == parked_id))
        _record(conn, PARKED_RETRIED, row, actor, applied=True)
        return True


def skip_parked(parked_id: int, actor: str | None = None) -> None:
    """Give up on a parked event for good: the row goes, the projection never
    applies that event (recorded as an event with `actor`)."""
    with db.transaction() as conn:
        row = _parked_row(conn, parked_id)
        conn.execute(delete(parked_events).where(parked_events.c.id == parked_id))
        _record(conn, PARKED_SKIPPED, row, actor, position=row.position)
