"""Small helpers shared by tests (no fixtures here)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, UniqueConstraint, event

from webapp.core import db
from webapp.eventstore import NewEvent, StreamId, append
from webapp.eventstore import projections as projections_mod

# A table that only tests use: projections under test record what they applied.
test_metadata = MetaData()
applied = Table(
    "test_applied",
    test_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("projection", String(100), nullable=False),
    Column("event_id", String(36), nullable=False),
    UniqueConstraint("projection", "event_id"),
)


@contextmanager
def statements() -> Iterator[list[str]]:
    """The SQL sent through the app's engine while the block runs (whitespace
    collapsed), seen by SQLAlchemy's `before_cursor_execute`."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        seen.append(" ".join(sql.split()))

    engine = db.get_engine()
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


@contextmanager
def applied_table() -> Iterator[Table]:
    engine = db.get_engine()
    test_metadata.create_all(engine)
    try:
        yield applied
    finally:
        test_metadata.drop_all(engine)


def append_one(event_type: str = "thing.happened", payload: dict | None = None) -> str:
    with db.transaction() as conn:
        (e,) = append(
            conn,
            StreamId("default", "thing", str(uuid.uuid4())),
            [NewEvent(event_type, payload or {})],
            0,
        )
    return e.id


@contextmanager
def projection(name: str, types: list[str], apply, start: str = "beginning") -> Iterator[None]:  # type: ignore[no-untyped-def]
    projections_mod.register(name, types, apply, start)  # type: ignore[arg-type]
    try:
        yield
    finally:
        projections_mod.unregister(name)
