"""The console's reads: small functions, each one or two indexed queries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, literal, select, tuple_

from webapp.eventstore import Event, read_stream
from webapp.workflows import operations as ops
from webapp.workflows.definition import catalog
from webapp.workflows.store import runs
from webapp.workflows.store.tables import workflow_runs

PAGE_SIZE = 50
TIMELINE_LIMIT = 500  # a run page shows at most its last 500 events
COUNT_CAP = 10_000  # counts per status above this show as "10,000+"
# The words the console shows (and filters by) for the stored statuses.
STATUSES = {
    "running": "running",
    "waiting": "suspended",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}
WORD_OF = {stored: word for word, stored in STATUSES.items()}
OPEN = ("running", "suspended")


@dataclass(frozen=True)
class RunFilter:
    tenant: str
    status: str | None = None  # a stored status
    workflow: str | None = None
    started_after: datetime | None = None
    before: tuple[datetime, str] | None = None  # keyset: (started_at, run_id) of the last row


@dataclass(frozen=True)
class RunsPage:
    rows: list[Any]
    next_cursor: tuple[datetime, str] | None
    counts: dict[str, int]  # per status word, for the tenant and the other filters


LISTED = (
    workflow_runs.c.run_id,
    workflow_runs.c.tenant_id,
    workflow_runs.c.workflow_name,
    workflow_runs.c.status,
    workflow_runs.c.step_index,
    workflow_runs.c.started_at,
    workflow_runs.c.updated_at,
)


def _common(q: Any, f: RunFilter) -> Any:
    q = q.where(workflow_runs.c.tenant_id == f.tenant)
    if f.workflow:
        q = q.where(workflow_runs.c.workflow_name == f.workflow)
    if f.started_after:
        q = q.where(workflow_runs.c.started_at > f.started_after)
    return q


def runs_page(conn: Connection, f: RunFilter, size: int | None = None) -> RunsPage:
    """Newest first; keyset paging on (started_at, run_id), which an index covers."""
    size = size or PAGE_SIZE
    q = _common(select(*LISTED), f)
    if f.status:
        q = q.where(workflow_runs.c.status == f.status)
    if f.before:
        q = q.where(tuple_(workflow_runs.c.started_at, workflow_runs.c.run_id) < tuple_(*f.before))
    q = q.order_by(workflow_runs.c.started_at.desc(), workflow_runs.c.run_id.desc())
    rows = list(conn.execute(q.limit(size + 1)))
    cursor = (rows[size - 1].started_at, rows[size - 1].run_id) if len(rows) > size else None
    counts = conn.execute(
        select(*(_capped_count(f, stored).label(word) for word, stored in STATUSES.items()))
    ).one()
    return RunsPage(rows[:size], cursor, {w: int(n) for w, n in counts._mapping.items()})


def _capped_count(f: RunFilter, stored: str) -> Any:
    """Runs of one status, counted up to COUNT_CAP + 1 (shown as "10,000+"): an
    index-only range scan each, where GROUP BY would read every run of the tenant."""
    hits = _common(select(literal(1)).where(workflow_runs.c.status == stored), f)
    return select(func.count()).select_from(hits.limit(COUNT_CAP + 1).subquery()).scalar_subquery()


def step_name(workflow_name: str, index: int) -> str:
    """The step's name in the loaded definition, else its number ("–" past the
    last step: the run has settled)."""
    wf = catalog.get(workflow_name)
    if wf is not None and 0 <= index < len(wf.steps):
        return f"{index}: {wf.steps[index].name}"
    return "–" if wf is not None and index >= len(wf.steps) else str(index)


def valid_run_id(run_id: str) -> bool:
    try:
        return str(uuid.UUID(run_id)) == run_id.lower() and len(run_id) == 36
    except ValueError:
        return False


@dataclass(frozen=True)
class RunDetail:
    run: Any
    events: list[Event]  # the last TIMELINE_LIMIT at most
    pending: list[Any]
    loaded_fingerprint: str | None  # None: the workflow is not registered here

    @property
    def fingerprint_matches(self) -> bool:
        return self.loaded_fingerprint == self.run.fingerprint

    @property
    def events_left_out(self) -> int:
        return max(0, int(self.run.version) - len(self.events))

    @property
    def can_cancel(self) -> bool:
        return bool(self.run.status in OPEN)

    @property
    def can_retry(self) -> bool:
        return bool(self.run.status == "failed")


def run_detail(conn: Connection, run_id: str) -> RunDetail | None:
    """None for an unknown or malformed id."""
    if not valid_run_id(run_id):
        return None
    try:
        run = ops.find_run(conn, run_id)
    except ops.OperationError:
        return None
    wf = catalog.get(run.workflow_name)
    since = max(0, int(run.version) - TIMELINE_LIMIT)
    return RunDetail(
        run,
        read_stream(conn, runs.stream(run.tenant_id, run.run_id), after_version=since),
        ops.pending_rows(conn, run_id),
        wf.fingerprint if wf is not None else None,
    )


def stuck_runs(conn: Connection, tenant: str) -> list[dict[str, Any]]:
    """`flask workflows stuck`, for one tenant: due for more than 5 minutes and not
    advanced, or running under a lease whose worker is gone."""
    return [r for r in ops.stuck(conn) if r["tenant_id"] == tenant]
