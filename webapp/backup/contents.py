"""What a database holds, summed up: the figures a backup's manifest keeps,
and that the start-up checks compare a restored database with.

Read in one snapshot (the caller's connection): on SQLite the copy itself,
on PostgreSQL the transaction whose snapshot `pg_dump` takes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text


def _pairs(conn: Connection, sql: str) -> dict[str, int]:
    return {str(k): int(v) for k, v in conn.execute(text(sql)).all()}


def summary(conn: Connection) -> dict[str, Any]:
    """Events (count, head position), streams (count, and how many have a
    version missing: every stream's versions run 1..n unless some were
    erased), runs by status, waits, mails by status, projection cursors and
    the schema's migration."""
    events, head = conn.execute(
        text("SELECT count(*), coalesce(max(position), 0) FROM events")
    ).one()
    streams, gapped = conn.execute(
        text(
            "SELECT count(*), coalesce(sum(CASE WHEN n <> top OR low <> 1 THEN 1 ELSE 0 END), 0) "
            "FROM (SELECT count(*) AS n, max(version) AS top, min(version) AS low FROM events "
            "GROUP BY tenant_id, aggregate_type, aggregate_id) AS s"
        )
    ).one()
    return {
        "events": int(events),
        "head_position": int(head),
        "streams": int(streams),
        "streams_with_missing_versions": int(gapped),
        "runs": _pairs(conn, "SELECT status, count(*) FROM workflow_runs GROUP BY status"),
        "waits": int(conn.execute(text("SELECT count(*) FROM workflow_run_pending")).scalar_one()),
        "mails": _pairs(conn, "SELECT status, count(*) FROM mail_outbox GROUP BY status"),
        "cursors": _pairs(conn, "SELECT name, position FROM projection_cursors"),
        "migration": ",".join(
            sorted(
                str(v)
                for v in conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
            )
        ),
    }


def differences(expected: dict[str, Any], found: dict[str, Any]) -> list[str]:
    """`name: expected -> found` for every figure that differs."""
    return [
        f"{key}: {expected.get(key)!r} -> {found.get(key)!r}"
        for key in sorted(set(expected) | set(found))
        if expected.get(key) != found.get(key)
    ]
