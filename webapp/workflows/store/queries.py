"""Reads of the run tables for operators, the console and the privacy export:
each one or two indexed queries, nothing locked."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, literal, or_, select, text, tuple_

from webapp.core import clock
from webapp.core.db import UTCDateTime
from webapp.workflows.store import runs
from webapp.workflows.store.run_events import OPEN, RunStatus
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

COUNT_CAP = 10_000  # counts per status above this show as "10,000+"


# The tenants that have runs: a loose index scan (one probe of the primary
# key per tenant, however many runs each has).
_RUN_TENANTS = text(
    "WITH RECURSIVE t(id) AS (SELECT min(tenant_id) FROM workflow_runs"
    " UNION ALL SELECT (SELECT min(tenant_id) FROM workflow_runs WHERE tenant_id > t.id)"
    " FROM t WHERE t.id IS NOT NULL)"
    " SELECT id FROM t WHERE id IS NOT NULL"
)


def list_runs(
    conn: Connection, status: str | None = None, workflow: str | None = None, limit: int = 200
) -> list[Any]:
    """Runs of every tenant, newest first (`flask workflows runs`): the newest
    `limit` of each tenant, read along the console's per-tenant indexes, then
    merged. One ORDER BY over all tenants' runs has no index to follow: it
    read and sorted every run ever kept, a cost that grew with history."""
    c = workflow_runs.c
    rows: list[Any] = []
    for (tenant,) in conn.execute(_RUN_TENANTS).all():
        q = select(workflow_runs).where(c.tenant_id == tenant)
        q = q.where(*run_conditions(None, status, workflow))
        rows.extend(conn.execute(q.order_by(c.started_at.desc(), c.run_id.desc()).limit(limit)))
    rows.sort(key=lambda r: (r.started_at, r.run_id), reverse=True)
    return rows[:limit]


def find_run(conn: Connection, run_id: str) -> Any:
    """The runs row of `run_id` in any tenant, or None."""
    return conn.execute(select(workflow_runs).where(workflow_runs.c.run_id == run_id)).first()


def pending_rows(conn: Connection, run_id: str) -> list[Any]:
    return list(
        conn.execute(select(workflow_run_pending).where(workflow_run_pending.c.run_id == run_id))
    )


def pending_wake_at(conn: Connection, tenant_id: str, run_id: str, step_index: int) -> Any:
    return conn.execute(
        select(workflow_run_pending.c.wake_at).where(
            workflow_run_pending.c.tenant_id == tenant_id,
            workflow_run_pending.c.run_id == run_id,
            workflow_run_pending.c.step_index == step_index,
        )
    ).scalar()


def stale_running(conn: Connection, tenant_id: str | None = None, limit: int = 1000) -> list[Any]:
    """(tenant_id, run_id) of running runs nobody executes: never picked up, or
    their worker died (their lease, or start grace, ran out). Oldest first."""
    q = (
        select(workflow_runs.c.tenant_id, workflow_runs.c.run_id)
        .where(
            workflow_runs.c.status == RunStatus.RUNNING,
            workflow_runs.c.lease_until < clock.now(),
        )
        .order_by(workflow_runs.c.lease_until)
        .limit(limit)
    )
    if tenant_id is not None:
        q = q.where(workflow_runs.c.tenant_id == tenant_id)
    return list(conn.execute(q))


def unrenewed(conn: Connection, tenant_id: str, before: datetime, limit: int = 500) -> list[Any]:
    """Running runs of a tenant whose lease runs out before `before` (expired
    ones first): (tenant_id, run_id, lease_token, lease_holder, lease_until)."""
    c = workflow_runs.c
    return list(
        conn.execute(
            select(c.tenant_id, c.run_id, c.lease_token, c.lease_holder, c.lease_until)
            .where(c.tenant_id == tenant_id, c.status == RunStatus.RUNNING, c.lease_until < before)
            .order_by(c.lease_until)
            .limit(limit)
        )
    )


def stuck(conn: Connection, after: timedelta) -> tuple[list[Any], list[Any]]:
    """(pending rows due for longer than `after`, running rows whose lease ran
    out longer than `after` ago or who never had one)."""
    limit = clock.now() - after
    due = conn.execute(
        select(workflow_run_pending)
        .where(workflow_run_pending.c.wake_at < limit)
        .order_by(workflow_run_pending.c.wake_at)
    )
    running = conn.execute(
        select(workflow_runs).where(
            workflow_runs.c.status == RunStatus.RUNNING,
            or_(workflow_runs.c.lease_until < limit, workflow_runs.c.lease_until.is_(None)),
        )
    )
    return list(due), list(running)


def gauge_parts(now: datetime, tenant_ids: Any) -> tuple[Any, Any]:
    """For the metrics' one gauge statement: (kind, key, n, oldest) rows of the
    open runs per status, and of the pending rows due now (with the oldest
    wake-up). Each reads only its index."""
    runs = (
        select(
            literal("runs").label("kind"),
            workflow_runs.c.status.label("key"),
            func.count().label("n"),
            literal(None, UTCDateTime()).label("oldest"),
        )
        .where(workflow_runs.c.tenant_id.in_(tenant_ids), workflow_runs.c.status.in_(OPEN))
        .group_by(workflow_runs.c.status)
    )
    p = workflow_run_pending
    due = select(
        literal("due").label("kind"),
        literal("due").label("key"),
        func.count().label("n"),
        func.min(p.c.wake_at).label("oldest"),
    ).where(p.c.tenant_id.in_(tenant_ids), p.c.wake_at <= now)
    return runs, due


def runs_of_subject(conn: Connection, tenant_id: str, subject_id: str) -> list[Any]:
    """Every run started for a subject (the trigger event's aggregate), oldest first."""
    return list(
        conn.execute(
            select(workflow_runs)
            .where(workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.subject_id == subject_id)
            .order_by(workflow_runs.c.started_at)
        )
    )


def run_conditions(
    tenant: str | None = None,
    status: str | None = None,
    workflow: str | None = None,
    started_after: datetime | None = None,
    started_before: datetime | None = None,
) -> list[Any]:
    """What a runs filter means, written once: the console's list and the bulk
    actions by filter (CLI and console) select with these. `started_after`
    includes its instant, `started_before` does not."""
    c = workflow_runs.c
    conds: list[Any] = []
    if tenant:
        conds.append(c.tenant_id == tenant)
    if status:
        conds.append(c.status == status)
    if workflow:
        conds.append(c.workflow_name == workflow)
    if started_after:
        conds.append(c.started_at >= started_after)
    if started_before:
        conds.append(c.started_at < started_before)
    return conds


@dataclass(frozen=True)
class RunFilter:
    tenant: str
    status: str | None = None  # a stored status
    workflow: str | None = None
    started_after: datetime | None = None
    started_before: datetime | None = None
    before: tuple[datetime, str] | None = None  # keyset: (started_at, run_id) of the last row


LISTED = (
    workflow_runs.c.run_id,
    workflow_runs.c.tenant_id,
    workflow_runs.c.workflow_name,
    workflow_runs.c.status,
    workflow_runs.c.step_index,
    workflow_runs.c.definition_version,
    workflow_runs.c.started_at,
    workflow_runs.c.updated_at,
    workflow_runs.c.concurrency_key,
    workflow_runs.c.priority,
    workflow_runs.c.paused_by,
)


def _common(q: Any, f: RunFilter) -> Any:
    """Every filter but the status (the counts are per status)."""
    conds = run_conditions(f.tenant, None, f.workflow, f.started_after, f.started_before)
    return q.where(*conds)


def runs_page(conn: Connection, f: RunFilter, size: int) -> tuple[list[Any], Any]:
    """A page of runs, newest first, and the keyset cursor of the next one (or
    None): paging on (started_at, run_id), which an index covers."""
    q = _common(select(*LISTED), f).where(*run_conditions(status=f.status))
    if f.before:
        q = q.where(tuple_(workflow_runs.c.started_at, workflow_runs.c.run_id) < tuple_(*f.before))
    q = q.order_by(workflow_runs.c.started_at.desc(), workflow_runs.c.run_id.desc())
    rows = list(conn.execute(q.limit(size + 1)))
    cursor = (rows[size - 1].started_at, rows[size - 1].run_id) if len(rows) > size else None
    return rows[:size], cursor


def status_counts(conn: Connection, f: RunFilter, statuses: dict[str, str]) -> dict[str, int]:
    """Runs per status ({label: stored status}), each counted up to COUNT_CAP + 1
    in one statement: an index-only range scan per status, where GROUP BY
    would read every run of the tenant."""

    def capped(stored: str) -> Any:
        hits = _common(select(literal(1)).where(workflow_runs.c.status == stored), f)
        return (
            select(func.count()).select_from(hits.limit(COUNT_CAP + 1).subquery()).scalar_subquery()
        )

    counts = conn.execute(
        select(*(capped(stored).label(word) for word, stored in statuses.items()))
    ).one()
    return {w: int(n) for w, n in counts._mapping.items()}


def open_positions(conn: Connection) -> list[Any]:
    """Where open runs stand, counted per workflow, version, definition,
    status and step (the deploy check's one read)."""
    c = workflow_runs.c
    cols = [c.workflow_name, c.definition_version, c.fingerprint, c.status, c.step_index]
    q = (
        select(*cols, func.count().label("runs"))
        .where(c.status.in_(OPEN))
        .group_by(*cols)
        .order_by(*cols)
    )
    return list(conn.execute(q))


def open_runs_at(
    conn: Connection, workflow: str, version: int, run_id: str | None = None
) -> list[Any]:
    """The open runs of one workflow version (or that one run of it), locked,
    in a stable order (a migration's one read)."""
    c = workflow_runs.c
    q = select(workflow_runs).where(
        c.workflow_name == workflow, c.definition_version == version, c.status.in_(OPEN)
    )
    if run_id is not None:
        q = q.where(c.run_id == run_id)
    return list(conn.execute(runs.locked(conn, q.order_by(c.tenant_id, c.run_id))))


def children(conn: Connection, tenant_id: str, run_id: str) -> list[Any]:
    """A run's child runs (`run_workflow`), oldest first."""
    c = workflow_runs.c
    q = select(c.run_id, c.workflow_name, c.status, c.started_at).where(
        c.tenant_id == tenant_id, c.parent_run_id == run_id
    )
    return list(conn.execute(q.order_by(c.started_at, c.run_id)))
