"""resume-run's rules 1-7, decided for a batch of (pending row, runs row) pairs.

Claims are made in batches (`claim_batch`): the pending rows and their runs rows
are locked, rules 2-6 are decided in Python from those rows, and one append
writes every step.resumed (and any run-failed) with its run's expected version;
the projections of those events are applied set-based in the same transaction.
A single resume-run is a batch of one. The continuation (running the steps)
happens after that transaction commits, under the lease the claim took.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from webapp import clock, db
from webapp.eventstore import NewEvent, StreamId, get_events
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import Workflow
from webapp.workflows.engine import heartbeat as leases
from webapp.workflows.engine.run_state import RunState
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

ALREADY = "already-resumed"
RESUMED = "resumed"
FAILED = "failed"


@dataclass(frozen=True)
class Claim:
    outcome: str  # resumed | already-resumed | failed
    token: str | None = None
    reason: str | None = None
    state: RunState | None = None


def validate(run_id: Any, step_index: Any) -> tuple[str, int]:
    """Rule 1: runId is a UUID, stepIndex an integer >= 0."""
    try:
        rid = str(uuid.UUID(str(run_id)))
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"resume-run: runId must be a UUID, got {run_id!r}") from None
    if isinstance(step_index, bool) or not isinstance(step_index, int) or step_index < 0:
        raise ValueError(f"resume-run: stepIndex must be an integer >= 0, got {step_index!r}")
    return rid, step_index


def settled(row: Any, pending: Any) -> bool:
    """Rule 3: completed, failed, cancelled, or already resumed at this step and attempt.

    Answered from the run's `workflow_runs` row, which the run events maintain
    inline (same transaction as the stream, and its `version` is the stream's),
    so it says exactly what replaying the current run's stream would: the run
    is still waiting at this suspension only while the row is `suspended` at
    this step (and, for a retry, at this attempt). Anything else (settled, or
    running because a step.resumed landed) is settled for this resume."""
    if row.status != "suspended" or row.step_index != pending.step_index:
        return True
    return bool(
        pending.suspension_event_type == ev.RETRY_SCHEDULED and row.attempt != pending.retry_attempt
    )


def lock_keys(conn: Connection, tenant_id: str, keys: list[tuple[str, int]]) -> list[Any]:
    """(pending, runs row) for the given (run, step) keys, locked (PostgreSQL):
    the runs rows first, as every other writer of a run does."""
    run_ids = sorted({rid for rid, _ in keys})
    rq = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id.in_(run_ids)
    )
    pq = select(workflow_run_pending).where(
        workflow_run_pending.c.tenant_id == tenant_id,
        workflow_run_pending.c.run_id.in_(run_ids),
    )
    if not db.is_sqlite(conn):
        rq = rq.order_by(workflow_runs.c.run_id).with_for_update()
        pq = pq.order_by(workflow_run_pending.c.run_id).with_for_update()
    rows = {r.run_id: r for r in conn.execute(rq)}
    wanted = set(keys)
    return [(p, rows.get(p.run_id)) for p in conn.execute(pq) if (p.run_id, p.step_index) in wanted]


def _failed(row: Any, step_index: int, reason: str, error: str) -> NewEvent:
    log.warning(
        "workflow run failed on resume",
        extra={"run_id": row.run_id, "workflow": row.workflow_name, "reason": reason},
    )
    return NewEvent(ev.RUN_FAILED, ev.run_failed(row.workflow_name, step_index, error, reason))


def claim_batch(conn: Connection, tenant_id: str, pairs: list[Any]) -> list[Claim]:
    """Rules 2-7 of resume-run for many (pending, runs row) pairs whose rows the
    caller locked, inside the caller's transaction: one Claim per pair."""
    claims: list[Claim | None] = []
    batch: list[tuple[StreamId, list[NewEvent], int]] = []
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[tuple[int, Any, Any, Workflow]] = []
    seen: set[str] = set()
    for p, row in pairs:
        # rule 2 (no row: never got here), rule 3 before the definition lookup
        if row is None or p.run_id in seen or settled(row, p):
            claims.append(Claim(ALREADY))
            continue
        seen.add(p.run_id)
        wf = catalog.get(row.workflow_name)  # rule 4
        if wf is None or wf.fingerprint != (p.definition_fingerprint or row.fingerprint):
            why = (
                "is not registered" if wf is None else "definition changed since the run suspended"
            )
            batch.append(
                (
                    runs.stream(tenant_id, row.run_id),
                    [
                        _failed(
                            row,
                            p.step_index,
                            ev.REASON_DEFINITION_CHANGED,
                            f"workflow {row.workflow_name!r} {why}",
                        )
                    ],
                    row.version,
                )
            )
            claims.append(Claim(FAILED, reason=ev.REASON_DEFINITION_CHANGED))
            continue
        todo.append((len(claims), p, row, wf))
        claims.append(None)
    # rule 6 reads, one statement: trigger events and awaited events by reference
    wanted = {(row.trigger_event_ref or {}).get("eventId", "") for _, _, row, _ in todo}
    wanted |= {
        p.trigger_event_ref.get("eventId", "")
        for _, p, _, _ in todo
        if p.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and p.trigger_event_ref
    }
    found = get_events(conn, wanted - {""}) if todo else {}
    lease = clock.now() + leases.LEASE
    for at, p, row, wf in todo:
        # rule 5: the claim is the step.resumed appended at the row's version
        # (the stream's); a concurrent writer makes the whole append conflict.
        new = [NewEvent(ev.STEP_RESUMED, ev.step_resumed(p.step_index, p.retry_attempt))]
        batch.append((runs.stream(tenant_id, row.run_id), new, row.version))
        trigger = found.get((row.trigger_event_ref or {}).get("eventId", ""))
        step = wf.steps[p.step_index] if p.step_index < len(wf.steps) else None
        if trigger is None:
            new.append(
                _failed(
                    row,
                    p.step_index,
                    ev.REASON_TRIGGER_UNAVAILABLE,
                    "trigger event unavailable",
                )
            )
            claims[at] = Claim(FAILED, reason=ev.REASON_TRIGGER_UNAVAILABLE)
            continue
        if step is None:
            new.append(
                _failed(row, p.step_index, ev.REASON_DEFINITION_CHANGED, "step index out of range")
            )
            claims[at] = Claim(FAILED, reason=ev.REASON_DEFINITION_CHANGED)
            continue
        results = dict(row.results or {})
        if p.suspension_event_type == ev.RETRY_SCHEDULED:
            # rule 7: a retry continues at the same step as the next attempt
            values: dict[str, Any] = dict(
                step_index=p.step_index, attempt=int(p.retry_attempt or 1)
            )
        else:
            value: Any = None
            if p.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and p.trigger_event_ref:
                awaited = found.get(p.trigger_event_ref.get("eventId", ""))
                if awaited is None:
                    new.append(
                        _failed(
                            row,
                            p.step_index,
                            ev.REASON_AWAITED_UNAVAILABLE,
                            "awaited event unavailable",
                        )
                    )
                    claims[at] = Claim(FAILED, reason=ev.REASON_AWAITED_UNAVAILABLE)
                    continue
                value = awaited.payload
                results[runs.CONSUMED] = max(int(results.get(runs.CONSUMED, 0)), awaited.position)
            results[step.name] = value  # timeout: an empty result
            values = dict(step_index=p.step_index + 1, attempt=1, results=results)
        token = runs.new_token()
        extra[(tenant_id, row.run_id)] = dict(lease_token=token, lease_until=lease, **values)
        claims[at] = Claim(
            RESUMED,
            token=token,
            state=RunState(
                tenant_id,
                row.run_id,
                token,
                wf,
                trigger,
                values["step_index"],
                values["attempt"],
                results,
                row.fingerprint,
            ),
        )
    runs.append_batch(conn, batch, extra)
    return [c if c is not None else Claim(ALREADY) for c in claims]


def claim(conn: Connection, tenant_id: str, run_id: str, step_index: int) -> Claim:
    """Rules 2-7 of resume-run for one (run, step), inside the caller's transaction."""
    pairs = lock_keys(conn, tenant_id, [(run_id, step_index)])
    if not pairs:  # rule 2
        return Claim(ALREADY)
    return claim_batch(conn, tenant_id, pairs)[0]
