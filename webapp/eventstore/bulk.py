"""Set-based statements for PostgreSQL: many rows through one JSON parameter.

`INSERT .. SELECT .. FROM json_to_recordset(:rows)` has the same text for any
number of rows, so SQLAlchemy compiles it once and psycopg has the server
prepare it; an executemany sends one INSERT per row instead.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

_EVENT_COLUMNS = (
    ("position", "bigint"),
    ("id", "text"),
    ("tenant_id", "text"),
    ("aggregate_type", "text"),
    ("aggregate_id", "text"),
    ("version", "int"),
    ("type", "text"),
    ("payload", "json"),
    ("metadata", "json"),
    ("recorded_at", "timestamptz"),
)
_INSERT_EVENTS = text(
    "INSERT INTO events ({cols}) SELECT {cols} FROM json_to_recordset(CAST(:rows AS json))"
    " AS r({defs})".format(
        cols=", ".join(f'"{c}"' for c, _ in _EVENT_COLUMNS),
        defs=", ".join(f'"{c}" {t}' for c, t in _EVENT_COLUMNS),
    )
)


def instant(value: datetime) -> str:
    """An aware instant as ISO 8601 with its offset (UTCDateTime refuses naive ones)."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given; use webapp.clock.now()")
    return value.isoformat()


def insert_events(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Insert event rows (the `events` columns) in one statement. Payload and
    metadata are encoded like the JSON column encodes them, so a value JSON
    cannot hold fails here as it would there."""
    encoded = [{**r, "recorded_at": instant(r["recorded_at"])} for r in rows]
    conn.execute(_INSERT_EVENTS, {"rows": json.dumps(encoded)})
