"""A run's state and how it stops: what a claim hands the run loop
(`RunState`), what the run loop hands back when a run stops (`Stop`: completed,
failed, suspended by a wait) with the words it answers (`RunResult`), and
committing those stops, many runs of one tenant in one transaction
(`finish_many`)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from webapp.core import clock, db
from webapp.eventstore import Event, NewEvent, StreamId, VersionConflict
from webapp.workflows.definition.durations import to_instant
from webapp.workflows.definition.model import RunContext, Wait, Workflow
from webapp.workflows.interpreter import resolve
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs
from webapp.workflows.store.run_events import RunStatus

log = logging.getLogger("webapp.workflows")


@dataclass
class RunState:
    """What the claim (or advance) already knows about a run it leased, so the
    continuation need not read it again."""

    tenant_id: str
    run_id: str
    token: str
    wf: Workflow
    trigger: Event
    step_index: int
    attempt: int
    results: dict[str, Any]
    fingerprint: str

    @classmethod
    def leased(cls, row: Any, token: str, wf: Workflow, trigger: Event) -> RunState:
        """The state of a `workflow_runs` row whose lease `token` we just took."""
        return cls(
            row.tenant_id,
            row.run_id,
            token,
            wf,
            trigger,
            row.step_index,
            row.attempt,
            dict(row.results),
            wf.fingerprint,  # the definition it goes on with (rule 4 checked it)
        )


class RunResult(StrEnum):
    """How far the run loop got with a run."""

    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    LOST = "lost"  # its lease is gone (cancelled, taken over, or an outage outlasted it)


@dataclass
class Stop:
    """How a run stops: the run events to append (a wait that was already due
    on the way adds its step.waiting + step.resumed before the stop) and the
    runs columns their projection does not set (results, step)."""

    run_id: str
    token: str
    status: RunResult  # completed | failed | suspended
    events: list[NewEvent]
    values: dict[str, Any]
    step_index: int = 0
    wake_at: datetime | None = None


def completed(
    ctx: RunContext, wf: Workflow, token: str, carry: list[NewEvent] | None = None
) -> Stop:
    n = len(wf.steps)
    return Stop(
        ctx.run_id,
        token,
        RunResult.COMPLETED,
        [*(carry or []), NewEvent(ev.RUN_COMPLETED, ev.run_completed(wf.name, n))],
        dict(results=ctx.results, step_index=n, attempt=1),
    )


def failed(
    ctx: RunContext,
    wf: Workflow,
    exc: BaseException,
    token: str,
    carry: list[NewEvent] | None = None,
) -> Stop:
    # The raw error may hold personal data: the log gets it, the event does not.
    log.warning(
        "workflow step failed",
        extra={"workflow": wf.name, "run_id": ctx.run_id, "step_index": ctx.step_index},
        exc_info=exc,
    )
    return Stop(
        ctx.run_id,
        token,
        RunResult.FAILED,
        [
            *(carry or []),
            NewEvent(ev.RUN_FAILED, ev.run_failed(wf.name, ctx.step_index, ev.step_error(exc))),
        ],
        dict(results=storable(ctx.results)),
    )


def wake_at(ctx: RunContext, step: Wait) -> datetime:
    return to_instant(resolve(step.duration, ctx), clock.now())


def waiting(
    ctx: RunContext,
    step: Wait,
    token: str,
    fingerprint: str,
    at: datetime,
    carry: list[NewEvent] | None = None,
) -> Stop:
    return Stop(
        ctx.run_id,
        token,
        RunResult.SUSPENDED,
        [*(carry or []), waiting_event(ctx, at, fingerprint)],
        dict(results=ctx.results),
        step_index=ctx.step_index,
        wake_at=at,
    )


def waiting_event(ctx: RunContext, at: datetime, fingerprint: str) -> NewEvent:
    return NewEvent(
        ev.STEP_WAITING,
        ev.step_waiting(ctx.step_index, at.isoformat(), ctx.workflow_name, fingerprint),
    )


def passed_wait(ctx: RunContext, at: datetime, fingerprint: str) -> list[NewEvent]:
    """A wait already due when reached: suspended and resumed on the spot, the
    two events committed with the run's next stop."""
    return [
        waiting_event(ctx, at, fingerprint),
        NewEvent(ev.STEP_RESUMED, ev.step_resumed(ctx.step_index, None)),
    ]


def storable(results: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in results.items():
        try:
            json.dumps(v)
            out[k] = v
        except (TypeError, ValueError):
            continue
    return out


def finish_many(tenant_id: str, outcomes: list[Stop]) -> dict[str, str]:
    """Commit the stops of many leased runs of one tenant in one transaction:
    their run events in one append, their projections set-based. A run whose
    lease is gone (cancelled, taken over) is left alone: "lost"."""
    if not outcomes:
        return {}
    try:
        return _finish(tenant_id, outcomes)
    except VersionConflict:
        # Every writer of a run stream holds its runs row, which we lock, so this
        # should not happen; settle the batch run by run so one cannot sink all.
        if len(outcomes) == 1:
            log.warning("workflow run lost its stream", extra={"run_id": outcomes[0].run_id})
            return {outcomes[0].run_id: RunResult.LOST}
        out: dict[str, str] = {}
        for o in outcomes:
            out.update(finish_many(tenant_id, [o]))
        return out


def _finish(tenant_id: str, outcomes: list[Stop]) -> dict[str, str]:
    out: dict[str, str] = {}
    with db.transaction() as conn:
        rows = runs.lock_for_finish(conn, tenant_id, sorted({o.run_id for o in outcomes}))
        batch: list[tuple[StreamId, list[NewEvent], int]] = []
        extra: dict[tuple[str, str], dict[str, Any]] = {}
        for o in outcomes:
            row = rows.get(o.run_id)
            if row is None or row.status != RunStatus.RUNNING or row.lease_token != o.token:
                out[o.run_id] = RunResult.LOST
                continue
            batch.append((runs.stream(tenant_id, o.run_id), o.events, row.version))
            extra[(tenant_id, o.run_id)] = o.values
            out[o.run_id] = o.status
        runs.append_batch(conn, batch, extra, running=True)  # each row checked running above
    return out
