"""Bulk actions by filter (`flask workflows cancel|retry|pause --filter
status=failed,workflow=x,tenant=y,started-before=...`): the count first, the
action only with `--yes`, then each run through the same function as the
one-run command (its checks, its event, the operator as actor)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from webapp.workflows import operations as ops
from webapp.workflows import pausing
from webapp.workflows.store import queries
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.store.tables import workflow_runs

KEYS = ("status", "workflow", "tenant", "started-before", "started-after")
MAX_RUNS = 100_000


@dataclass(frozen=True)
class Filter:
    status: str | None = None
    workflow: str | None = None
    tenant: str | None = None
    started_before: datetime | None = None
    started_after: datetime | None = None


def parse_filter(text: str) -> Filter:
    """`key=value,...` (ValueError names what is wrong)."""
    values: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise ValueError(f"--filter takes key=value pairs, got {part!r}")
        if key not in KEYS:
            raise ValueError(f"--filter: unknown key {key!r} (known: {', '.join(KEYS)})")
        if key == "status" and value not in {s.value for s in RunStatus}:
            raise ValueError(f"--filter: unknown status {value!r}")
        if key.startswith("started-"):
            try:
                at = datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"--filter {key}: an ISO 8601 time, got {value!r}") from None
            if at.tzinfo is None:
                raise ValueError(f"--filter {key}: give a time zone (e.g. {value}Z or +00:00)")
            values[key.replace("-", "_")] = at
            continue
        values[key] = value
    if not values:
        raise ValueError("--filter needs at least one key=value")
    return Filter(**values)


def text_of(f: Filter) -> str:
    """The filter as `--filter` takes it (`parse_filter(text_of(f)) == f` when
    no value holds a comma)."""
    values = {
        "status": f.status,
        "workflow": f.workflow,
        "tenant": f.tenant,
        "started-before": f.started_before.isoformat() if f.started_before else None,
        "started-after": f.started_after.isoformat() if f.started_after else None,
    }
    return ",".join(f"{k}={v}" for k, v in values.items() if v)


def matching_rows(conn: Connection, f: Filter, among: Sequence[str] | None = None) -> list[Any]:
    """(run_id, status) of the runs the filter matches (of `among`, when
    given), oldest first, at most MAX_RUNS."""
    c = workflow_runs.c
    conds = queries.run_conditions(
        f.tenant, f.status, f.workflow, f.started_after, f.started_before
    )
    if among is not None:
        conds.append(c.run_id.in_(sorted(set(among))))
    q = select(c.run_id, c.status).where(*conds)
    return list(conn.execute(q.order_by(c.started_at, c.run_id).limit(MAX_RUNS)))


def matching(conn: Connection, f: Filter) -> list[str]:
    """The run ids the filter matches, oldest first."""
    return [r.run_id for r in matching_rows(conn, f)]


def in_order(action: str, rows: Sequence[Any]) -> list[str]:
    """The run ids of `rows` in the order to act on them: a cancel takes the
    queued runs first, so that cancelling a run that holds a concurrency slot
    does not start a queued run only to cancel it next."""
    if action != "cancel":
        return [r.run_id for r in rows]
    return [r.run_id for r in sorted(rows, key=lambda r: r.status != RunStatus.QUEUED)]


ACTIONS: dict[str, Callable[[str, str | None], Any]] = {
    "cancel": lambda run_id, actor: ops.cancel(run_id, reason="cancelled in bulk", actor=actor),
    "retry": lambda run_id, actor: ops.retry(run_id, actor=actor),
    "pause": lambda run_id, actor: pausing.pause(run_id, actor=actor),
}


def apply(action: str, run_ids: list[str], actor: str | None) -> tuple[int, dict[str, str]]:
    """Each run on its own (one failing never stops the rest): (done, errors by run)."""
    done, errors = 0, {}
    for run_id in run_ids:
        try:
            ACTIONS[action](run_id, actor)
            done += 1
        except ops.OperationError as exc:
            errors[run_id] = str(exc)
    return done, errors
