"""The SQL the run tables' writers share, with its dialect switches written
once: upserts, and one UPDATE for many runs rows. (Row locks: `runs`.)"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import JSON, Connection, Integer, Table, TextClause, bindparam, text, update
from sqlalchemy.dialects import postgresql, sqlite

from webapp.core import db
from webapp.core.db import UTCDateTime
from webapp.eventstore import bulk
from webapp.workflows.store.tables import workflow_runs


def _insert(conn: Connection, table: Table) -> Any:
    return (sqlite.insert if db.is_sqlite(conn) else postgresql.insert)(table)


def upsert(conn: Connection, table: Table, values: dict[str, Any], keys: list[str]) -> None:
    stmt = _insert(conn, table).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=keys, set_={k: v for k, v in values.items() if k not in keys}
    )
    conn.execute(stmt)


def insert_ignore(conn: Connection, table: Table, values: dict[str, Any], keys: list[str]) -> None:
    """INSERT .. ON CONFLICT DO NOTHING: a row written once, by whoever is first."""
    conn.execute(_insert(conn, table).values(**values).on_conflict_do_nothing(index_elements=keys))


def insert_ignore_many(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], keys: list[str]
) -> None:
    """One multi-row INSERT .. ON CONFLICT DO NOTHING."""
    if rows:
        conn.execute(
            _insert(conn, table).values(list(rows)).on_conflict_do_nothing(index_elements=keys)
        )


def upsert_many(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], keys: list[str]
) -> None:
    """INSERT .. ON CONFLICT DO UPDATE for rows that share their columns, as
    one executemany of one statement: compiled once per table and set of
    columns (SQLAlchemy's cache), sent as multi-row batches (its
    "insertmanyvalues"). A statement with the rows' values inline would be
    compiled again for every batch, which cost more than the writes."""
    if not rows:
        return
    stmt = _insert(conn, table)
    stmt = stmt.on_conflict_do_update(
        index_elements=keys, set_={k: stmt.excluded[k] for k in rows[0] if k not in keys}
    )
    conn.execute(stmt, list(rows))


def update_runs(conn: Connection, runs_values: dict[tuple[str, str], dict[str, Any]]) -> int:
    """UPDATE many runs rows ((tenant, run) -> columns): per distinct set of
    columns one UPDATE .. FROM json_to_recordset(..) on PostgreSQL (one round
    trip and one parameter, so the statement text is the same for any batch
    size: compiled once, prepared by the server), one executemany on SQLite.
    Returns the rows updated."""
    groups: dict[tuple[str, ...], list[tuple[str, str, dict[str, Any]]]] = {}
    for (tenant_id, run_id), values in sorted(runs_values.items()):
        if values:
            groups.setdefault(tuple(sorted(values)), []).append((tenant_id, run_id, values))
    done = 0
    for cols, items in groups.items():
        if db.is_sqlite(conn):
            stmt = (
                update(workflow_runs)
                .where(
                    workflow_runs.c.tenant_id == bindparam("k_tenant"),
                    workflow_runs.c.run_id == bindparam("k_run"),
                )
                .values({c: bindparam(f"v_{c}") for c in cols})
            )
            params = [
                {"k_tenant": t, "k_run": r, **{f"v_{c}": v[c] for c in cols}} for t, r, v in items
            ]
            done += conn.execute(stmt, params).rowcount
            continue
        rows = [{"k_tenant": t, "k_run": r, **{c: v[c] for c in cols}} for t, r, v in items]
        done += conn.execute(
            _pg_update(cols), {"rows": json.dumps(rows, default=_json_value)}
        ).rowcount
    return done


@lru_cache(maxsize=64)
def _pg_update(cols: tuple[str, ...]) -> TextClause:
    fields = ", ".join(f'"{c}" {_pg_type(workflow_runs.c[c].type)}' for c in cols)
    sets = ", ".join(f'"{c}" = v."{c}"' for c in cols)
    return text(
        f"UPDATE workflow_runs AS r SET {sets} "
        f"FROM json_to_recordset(CAST(:rows AS json)) AS v(k_tenant text, k_run text, {fields}) "
        "WHERE r.tenant_id = v.k_tenant AND r.run_id = v.k_run"
    )


def _pg_type(t: Any) -> str:
    if isinstance(t, JSON):
        return "json"
    if isinstance(t, UTCDateTime):
        return "timestamptz"
    if isinstance(t, Integer):
        return "int"
    return "text"


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return bulk.instant(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
