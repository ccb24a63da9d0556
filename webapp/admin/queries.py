"""The console's reads: small functions, each one or two indexed queries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from webapp.eventstore import Event, read_stream
from webapp.workflows import operations as ops
from webapp.workflows import versions
from webapp.workflows.definition import catalog
from webapp.workflows.definition.batches import MAX_BATCH
from webapp.workflows.store import batches, pauses, queries, runs, singletons, slots
from webapp.workflows.store.queries import COUNT_CAP, RunFilter
from webapp.workflows.store.run_events import OPEN, RunStatus

PAGE_SIZE = 50
TIMELINE_LIMIT = 500  # a run page shows at most its last 500 events
# The words the console shows (and filters by) for the stored statuses.
STATUSES: dict[str, str] = {
    "queued": RunStatus.QUEUED,
    "running": RunStatus.RUNNING,
    "waiting": RunStatus.SUSPENDED,
    "completed": RunStatus.COMPLETED,
    "failed": RunStatus.FAILED,
    "cancelled": RunStatus.CANCELLED,
    "skipped": RunStatus.SKIPPED,
}
WORD_OF = {stored: word for word, stored in STATUSES.items()}
__all__ = ["COUNT_CAP", "OPEN", "RunFilter", "RunsPage", "runs_page", "run_detail", "stuck_runs"]


@dataclass(frozen=True)
class RunsPage:
    rows: list[Any]
    next_cursor: tuple[datetime, str] | None
    counts: dict[str, int]  # per status word, for the tenant and the other filters
    positions: dict[str, int]  # queued runs of the page: their place in their key's queue


def runs_page(conn: Connection, f: RunFilter, size: int | None = None) -> RunsPage:
    """Newest first, keyset paged, with the capped count of every status and
    the queue places of the page's queued runs."""
    rows, cursor = queries.runs_page(conn, f, size or PAGE_SIZE)
    counts = queries.status_counts(conn, f, STATUSES)
    return RunsPage(rows, cursor, counts, slots.queue_positions(conn, rows))


def step_name(workflow_name: str, index: int, version: int | None = None) -> str:
    """The step's name in the loaded definition (of the run's version), else
    its number ("–" past the last step: the run has settled)."""
    wf = catalog.get(workflow_name, version)
    if wf is not None and 0 <= index < len(wf.steps):
        return f"{index}: {wf.steps[index].name}"
    if index < 0 or (wf is not None and index >= len(wf.steps)):
        return "–"  # a run's control (deadline, cancel-on), or past the last step
    return str(index)


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
    loaded_fingerprint: str | None  # None: the run's version is not registered here
    finding: versions.Finding | None = None  # its definition is not the code's (open runs)
    targets: tuple[int, ...] = ()  # versions in the code it could be migrated to
    workflow_paused: bool = False
    queue_position: int | None = None  # queued: 1 starts next among its key's queued runs
    first_event: Event | None = None  # run-started or run-queued: a rerun's `rerunOf`
    children: tuple[Any, ...] = ()  # its child runs (run_workflow): the tree's next level
    batch: dict[str, Any] | None = None  # a batched run: key, count, its events
    singleton: dict[str, Any] | None = None  # a singleton's run: key, replaced, replaced by

    @property
    def rerun_of(self) -> str | None:
        p = self.first_event.payload if self.first_event is not None else {}
        return str(p["rerunOf"]) if p.get("rerunOf") else None

    @property
    def rerun_from_step(self) -> int | None:
        p = self.first_event.payload if self.first_event is not None else {}
        return int(p["fromStep"]) if self.rerun_of and p.get("fromStep") is not None else None

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
        return bool(self.run.status == RunStatus.FAILED)

    @property
    def rerun_steps(self) -> list[int]:
        """Steps a rerun may start from (the run's definition is registered)."""
        wf = catalog.get(self.run.workflow_name, self.run.definition_version)
        never_started = self.run.status in (RunStatus.QUEUED, RunStatus.SKIPPED)
        if wf is None or never_started or not self.run.trigger_event_ref:
            return []
        return list(range(len(wf.steps)))

    @property
    def can_pause(self) -> bool:
        return bool(self.run.status in OPEN and self.run.paused_by is None)

    @property
    def can_resume(self) -> bool:
        held_by_workflow = self.run.paused_by == "workflow" and self.workflow_paused
        return bool(self.run.status in OPEN and self.run.paused_by and not held_by_workflow)

    @property
    def can_pause_workflow(self) -> bool:
        return not self.workflow_paused

    @property
    def can_resume_workflow(self) -> bool:
        return self.workflow_paused

    @property
    def can_migrate(self) -> bool:
        """Suspended at a step, and some version in the code to move it to."""
        return bool(self.run.status == RunStatus.SUSPENDED and self.targets)


def run_detail(conn: Connection, run_id: str) -> RunDetail | None:
    """None for an unknown or malformed id."""
    if not valid_run_id(run_id):
        return None
    try:
        run = ops.find_run(conn, run_id)
    except ops.OperationError:
        return None
    wf = catalog.get(run.workflow_name, run.definition_version)
    since = max(0, int(run.version) - TIMELINE_LIMIT)
    finding = versions.run_finding(conn, run)
    targets = tuple(
        w.version
        for w in catalog.versions(run.workflow_name)
        if w.version != run.definition_version or finding is not None
    )
    stream = runs.stream(run.tenant_id, run.run_id)
    events = read_stream(conn, stream, after_version=since)
    first = events[:1] if since == 0 else read_stream(conn, stream, limit=1)
    head = events if since == 0 else read_stream(conn, stream, limit=MAX_BATCH + 2)
    return RunDetail(
        run,
        events,
        ops.pending_rows(conn, run_id),
        wf.fingerprint if wf is not None else None,
        finding,
        targets,
        pauses.is_paused(conn, run.workflow_name),
        slots.queue_position(conn, run),
        first[0] if first else None,
        tuple(ops.children(conn, run)),
        batches.describe(conn, head),
        singletons.describe(first + events),
    )


def stuck_runs(conn: Connection, tenant: str) -> list[dict[str, Any]]:
    """`flask workflows stuck`, for one tenant: due for more than 5 minutes and not
    advanced, or running under a lease whose worker is gone."""
    return [r for r in ops.stuck(conn) if r["tenant_id"] == tenant]


def deploy_check(conn: Connection) -> versions.Report:
    """`flask workflows check`: every open run (all tenants) whose definition
    is not the code's."""
    return versions.check(conn)
