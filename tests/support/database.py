"""The database between tests: every table emptied, the counter and the
default tenant put back (what a fresh migration leaves)."""

from __future__ import annotations

from sqlalchemy import Connection, text

from webapp.core import clock as clockmod
from webapp.core import db
from webapp.eventstore import positions
from webapp.workflows.store import definitions


def clean_database() -> None:
    """Empty every table of the current engine's database, as a fresh one.
    On SQLite the transaction takes the write lock before its first read
    (BEGIN IMMEDIATE), so a request that still writes as the test ends (a
    page's script fires one as it loads) is waited for; a read first would
    fail at once with "database is locked" once that write commits."""
    engine = db.get_engine()
    names = [t.name for t in reversed(db.metadata.sorted_tables)]
    with engine.connect() as opened:
        conn = (
            opened.execution_options(**{db.BEGIN: "BEGIN IMMEDIATE"})
            if db.is_sqlite(engine)
            else opened
        )
        with conn.begin():
            _empty(conn, engine.dialect.name, names)


def _empty(conn: Connection, dialect: str, names: list[str]) -> None:
    existing = set(
        conn.execute(
            text("SELECT name FROM sqlite_master WHERE type='table'")
            if dialect == "sqlite"
            else text("SELECT tablename FROM pg_tables WHERE schemaname='public'")
        ).scalars()
    )
    for name in names:
        if name in existing:
            conn.execute(text(f'DELETE FROM "{name}"'))
    definitions.forget()  # the process's memory of stored definitions
    conn.execute(text("INSERT INTO event_counter (id, last_position) VALUES (1, 0)"))
    if dialect == "postgresql":
        # Positions start at 1 again. Left where the last test stopped, they
        # would show a fresh process a hole below the first event (the deleted
        # ones), which it only passes at a held-back dispatch's retry, and
        # that goes through rq-scheduler, which no test runs.
        conn.execute(text("SELECT setval('events_position_seq', 1, false)"))
    positions.forget()  # this process's walk, which the walk would also notice
    conn.execute(
        text("INSERT INTO tenants (id, name, created_at) VALUES ('default', 'Default', :t)"),
        {"t": clockmod.now().replace(tzinfo=None)},
    )
