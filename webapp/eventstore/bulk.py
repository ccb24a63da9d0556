"""Set-based statements for PostgreSQL: many rows through one JSON parameter.

`INSERT .. SELECT .. FROM json_to_recordset(:rows)` has the same text for any
number of rows, so SQLAlchemy compiles it once and psycopg has the server
prepare it; an executemany sends one INSERT per row instead.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import text


def instant(value: datetime) -> str:
    """An aware instant as ISO 8601 with its offset (UTCDateTime refuses naive ones)."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given; use webapp.core.clock.now()")
    return value.isoformat()


# PostgreSQL appends. Positions come from `event_position()` (migration
# 0016): drawn n at a time, sorted and paired with the rows by their `ord`,
# so a stream's versions and positions rise together whatever order the
# server evaluates the draws in.
_DRAWN = (
    "p AS (SELECT event_position() AS position FROM {source} generate_series(1, CAST(:n AS int))),"
    " ps AS (SELECT position, row_number() OVER (ORDER BY position) AS ord FROM p)"
)
_ROWS = (
    "json_to_recordset(CAST(:rows AS json)) AS r(ord bigint, id text, type text,"
    " payload json, metadata json, recorded_at timestamptz{more})"
)
_TARGET = (
    "INSERT INTO events (position, id, tenant_id, aggregate_type, aggregate_id, version,"
    " type, payload, metadata, recorded_at)"
)
# One stream: the version check (and, for a publish, the tenant's) in the
# same statement, so a single-event append is one statement and the commit.
_STREAM_OK = (
    "WITH cur AS (SELECT coalesce(max(version), 0) AS v FROM events"
    " WHERE tenant_id = :tenant_id AND aggregate_type = :aggregate_type"
    " AND aggregate_id = :aggregate_id),"
    " ok AS (SELECT v FROM cur WHERE (CAST(:expected AS int) < 0 OR v = CAST(:expected AS int))"
    " AND (NOT CAST(:check_tenant AS boolean)"
    " OR EXISTS (SELECT 1 FROM tenants WHERE id = :tenant_id)))"
)
# One event: plain parameters (a recordset's generic plan costs more than the
# insert). A lost race returns no row instead of aborting the transaction.
APPEND_ONE = text(
    _STREAM_OK
    + " "
    + _TARGET
    + " SELECT event_position(), :id, :tenant_id, :aggregate_type, :aggregate_id, ok.v + 1,"
    " :type, CAST(:payload AS json), CAST(:metadata AS json),"
    " CAST(:recorded_at AS timestamptz) FROM ok"
    " ON CONFLICT (tenant_id, aggregate_type, aggregate_id, version) DO NOTHING"
    " RETURNING position, version"
)
_APPEND_STREAM = (
    _STREAM_OK
    + ", "
    + _DRAWN.format(source="ok,")
    + " "
    + _TARGET
    + " SELECT ps.position, r.id, :tenant_id, :aggregate_type, :aggregate_id, ok.v + r.ord,"
    " r.type, r.payload, r.metadata, r.recorded_at FROM "
    + _ROWS.format(more="")
    + " JOIN ps ON ps.ord = r.ord CROSS JOIN ok"
)
APPEND_STREAM = text(_APPEND_STREAM + " RETURNING id, position, version")
# Many streams, versions checked by the caller (the unique constraint backs it).
INSERT_MANY = text(
    "WITH "
    + _DRAWN.format(source="")
    + " "
    + _TARGET
    + " SELECT ps.position, r.id, r.tenant_id, r.aggregate_type, r.aggregate_id, r.version,"
    " r.type, r.payload, r.metadata, r.recorded_at FROM "
    + _ROWS.format(more=", tenant_id text, aggregate_type text, aggregate_id text, version int")
    + " JOIN ps ON ps.ord = r.ord RETURNING id, position"
)


def one_row(row: dict[str, Any]) -> dict[str, Any]:
    """Parameters of APPEND_ONE for one event row."""
    return {
        "id": row["id"],
        "type": row["type"],
        "payload": json.dumps(row["payload"]),
        "metadata": json.dumps(row["metadata"]),
        "recorded_at": instant(row["recorded_at"]),
    }


def encode_rows(rows: list[dict[str, Any]]) -> str:
    """Rows for the statements above, numbered by `ord` in the given order."""
    return json.dumps(
        [{**r, "ord": i + 1, "recorded_at": instant(r["recorded_at"])} for i, r in enumerate(rows)]
    )
