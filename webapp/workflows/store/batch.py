"""Run events applied set-based: the drain claims and finishes runs a hundred
at a time. Inside `batched(conn)` the inline handlers (`projection`) only
collect the run events; `flush` then applies the very same effects set-based,
in the same transaction: one DELETE of the pending rows, one multi-row upsert
of new ones, one UPDATE .. FROM (VALUES ..) of the runs rows (plus whatever the
caller's transaction knows, e.g. the new lease)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import JSON, Connection, Integer, TextClause, bindparam, delete, text, update

from webapp import clock, db
from webapp.db import UTCDateTime
from webapp.eventstore import Event, bulk
from webapp.workflows.store import rows as rm
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

_BATCH = "workflows.batched_projection"


@contextmanager
def batched(conn: Connection) -> Iterator[list[Event]]:
    collected: list[Event] = []
    conn.info[_BATCH] = collected
    try:
        yield collected
    finally:
        conn.info.pop(_BATCH, None)


def collected(conn: Connection, e: Event) -> bool:
    batch = conn.info.get(_BATCH)
    if batch is None:
        return False
    batch.append(e)
    return True


def flush(
    conn: Connection,
    collected: Sequence[Event],
    extra: dict[tuple[str, str], dict[str, Any]] | None = None,
    running: bool = False,
) -> None:
    """Apply the collected run events (in order) like their inline handlers
    would, then `extra` values per (tenant, run). Every run must have its
    `workflow_runs` row already (a batch works on locked, existing runs).
    `running`: every run was running under the caller's lease, so it has no
    pending row in the table (a resume deleted it): no DELETE to send."""
    now = clock.now()
    cleared: dict[str, set[str]] = {}
    new_rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    runs_values: dict[tuple[str, str], dict[str, Any]] = {}
    for e in collected:
        key = (e.tenant_id, e.aggregate_id)
        values = runs_values.setdefault(key, {})
        if e.type in ev.SUSPENSIONS:
            row = rm.pending_row(e, rm.fingerprint_for(conn, e))
            new_rows[(e.tenant_id, e.aggregate_id, row["step_index"])] = row
            values.update(rm.suspended_values(e, now))
        elif e.type == ev.STEP_RESUMED or e.type in ev.SETTLING:
            # deletes run before the upserts: drop rows this batch suspended earlier
            cleared.setdefault(e.tenant_id, set()).add(e.aggregate_id)
            for k in [k for k in new_rows if k[:2] == key]:
                del new_rows[k]
            values.update(
                rm.resumed_values(e, now)
                if e.type == ev.STEP_RESUMED
                else rm.settled_values(e, now)
            )
        else:  # pragma: no cover - only run events of these kinds are collected
            raise ValueError(f"cannot batch {e.type}")
    for key, more in (extra or {}).items():
        runs_values.setdefault(key, {}).update(more, updated_at=now)
    for tenant_id, run_ids in ({} if running else cleared).items():
        conn.execute(
            delete(workflow_run_pending).where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(run_ids)),
            )
        )
    rm.upsert_many(
        conn,
        workflow_run_pending,
        [new_rows[k] for k in sorted(new_rows)],
        ["tenant_id", "run_id", "step_index"],
    )
    update_runs(conn, runs_values)


def update_runs(conn: Connection, runs_values: dict[tuple[str, str], dict[str, Any]]) -> None:
    """UPDATE many runs rows: per distinct set of columns one UPDATE .. FROM
    json_to_recordset(..) on PostgreSQL (one round trip, one parameter, so the
    statement text is the same for any batch size: compiled once, prepared by
    the server), one executemany on SQLite."""
    groups: dict[tuple[str, ...], list[tuple[str, str, dict[str, Any]]]] = {}
    for (tenant_id, run_id), values in sorted(runs_values.items()):
        if values:
            groups.setdefault(tuple(sorted(values)), []).append((tenant_id, run_id, values))
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
            conn.execute(
                stmt,
                [
                    {"k_tenant": t, "k_run": r, **{f"v_{c}": v[c] for c in cols}}
                    for t, r, v in items
                ],
            )
            continue
        rows = [{"k_tenant": t, "k_run": r, **{c: v[c] for c in cols}} for t, r, v in items]
        conn.execute(_pg_update(cols), {"rows": json.dumps(rows, default=_json_value)})


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
