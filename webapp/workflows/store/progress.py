"""A run's progress entries: `ctx.emit(name, data)` inside a step appends one,
in order and durable, for a page that follows the run live (server-sent
events, `webapp/live`).

Each entry is a row of `workflow_run_progress` (its data, its size) and a
`workflow.progress` event on the run's stream (its name and number), written
in one transaction of its own under the run's row lock, by the lease holder
only: an entry is committed when `emit` returns, while its step still runs.
A step that runs again after a crash emits its entries again (at least once,
like a mail). The data lives in the row only, so erasing the run's subject
erases it (`forget`).

Bounds (settings): at most `max_entries` entries and `max_bytes` bytes of
JSON per run; the emit past them raises `ProgressLimitExceeded` in the step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, update

from webapp.core import clock, db
from webapp.eventstore import Event, register_inline
from webapp.workflows.store import runs
from webapp.workflows.store.tables import workflow_run_progress, workflow_runs

PROGRESS = "workflow.progress"
MAX_NAME = 200
_p = workflow_run_progress.c


@dataclass
class Limits:
    max_entries: int = 1000
    max_bytes: int = 1024 * 1024


limits = Limits()


def configure(max_entries: int, max_bytes: int) -> None:
    """The bounds per run (`WORKFLOW_PROGRESS_MAX_ENTRIES`, `..._MAX_BYTES`)."""
    limits.max_entries, limits.max_bytes = max_entries, max_bytes


class ProgressLimitExceeded(Exception):  # noqa: N818 - reads as what happened
    """The run has emitted as many entries, or bytes, as it may."""


class NotHere(Exception):  # noqa: N818
    """`emit` inside a step that writes to the database (it holds the run's row)."""


class NotLeased(Exception):  # noqa: N818
    """`emit` ahead of the run's lease (settle-ahead): the run loop lets it
    out of the step, and the run goes on the usual way, under its lease."""


def _size(name: Any, data: Any) -> int:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise ValueError(f"emit: the name must be text of 1 to {MAX_NAME} characters")
    try:
        return len(json.dumps(data))
    except (TypeError, ValueError):
        raise TypeError(f"emit {name!r}: the data is not JSON-serialisable") from None


def emit(tenant_id: str, run_id: str, token: str, name: str, data: Any) -> int:
    """Append one entry to the run's progress (its lease `token` still held):
    its number (1, 2, ...). ProgressLimitExceeded past the bounds; NotLeased
    ahead of the run's lease (no `token`), which sends the run the usual way."""
    if not token:
        raise NotLeased("emit: the run is not leased yet")
    size = _size(name, data)
    with db.transaction() as conn:
        row = runs.owned(conn, tenant_id, run_id, token)
        if row is None:
            raise RuntimeError("emit: the run's lease is gone")
        count, total = conn.execute(
            select(func.count(), func.coalesce(func.sum(_p.size), 0)).where(
                _p.tenant_id == tenant_id, _p.run_id == run_id
            )
        ).one()
        if count + 1 > limits.max_entries:
            raise ProgressLimitExceeded(
                f"emit {name!r}: the run has {count} progress entries, the most it may have"
            )
        if total + size > limits.max_bytes:
            raise ProgressLimitExceeded(
                f"emit {name!r}: {size} bytes more would pass the run's {limits.max_bytes} bytes"
            )
        seq = int(count) + 1
        e = runs.append_run_event(conn, row, PROGRESS, {"name": name, "seq": seq})
        conn.execute(
            workflow_run_progress.insert().values(
                tenant_id=tenant_id,
                run_id=run_id,
                seq=seq,
                name=name,
                data=data,
                size=size,
                version=e.version,
                emitted_at=clock.now(),
            )
        )
    return seq


def not_in_transaction(name: str, data: Any) -> int:
    raise NotHere(
        f"emit {name!r}: not inside a step that writes to the database; emit from a compute step"
    )


def entries(conn: Connection, tenant_id: str, run_id: str, after_version: int = 0) -> list[Any]:
    """The run's entries whose events come after `after_version`, in order."""
    q = select(workflow_run_progress).where(
        _p.tenant_id == tenant_id, _p.run_id == run_id, _p.version > after_version
    )
    return list(conn.execute(q.order_by(_p.seq)))


def forget(conn: Connection, tenant_id: str, subject_id: str) -> None:
    """Erase the data of every progress entry of a subject's runs."""
    of_subject = select(workflow_runs.c.run_id).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.subject_id == subject_id
    )
    conn.execute(
        update(workflow_run_progress)
        .where(_p.tenant_id == tenant_id, _p.run_id.in_(of_subject))
        .values(data=None)
    )


def _on_erased(conn: Connection, e: Event) -> None:
    forget(conn, e.tenant_id, e.aggregate_id)


def register() -> None:
    register_inline(PROGRESS, runs.follow_stream)
    register_inline("user.erased", _on_erased)
