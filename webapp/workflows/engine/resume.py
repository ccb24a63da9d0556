"""The resume-run job and advance: the entries that take a run's lease and
continue it (`runner`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from webapp import clock, db
from webapp.eventstore import VersionConflict, get_event, get_events
from webapp.eventstore.tables import tenants
from webapp.workflows.definition import catalog
from webapp.workflows.dispatch.drain import continue_runs
from webapp.workflows.dispatch.signals import schedule_resume
from webapp.workflows.engine import heartbeat as leases
from webapp.workflows.engine import run_loop as runner
from webapp.workflows.engine.claims import (
    ALREADY,
    FAILED,
    RESUMED,
    claim,
    claim_batch,
    lock_keys,
    validate,
)
from webapp.workflows.engine.run_state import RunState
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs
from webapp.workflows.store.batch import update_runs
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

__all__ = [
    "ALREADY",
    "FAILED",
    "RESUMED",
    "advance",
    "pending_wake_at",
    "resume_many",
    "resume_run",
    "validate_request",
]


_known_tenants: set[str] = set()


def validate_request(tenant_id: Any, run_id: Any, step_index: Any) -> tuple[str, str, int]:
    """Rule 1, before anything else in every entry (job, function, CLI): a
    known tenant, a UUID run id, an integer step index >= 0. ValueError names
    what is wrong; nothing has been read or written for the run."""
    rid, idx = validate(run_id, step_index)
    if not isinstance(tenant_id, str) or not tenant_id:
        raise ValueError(f"resume-run: tenant must be a tenant id, got {tenant_id!r}")
    if tenant_id not in _known_tenants:
        with db.reading() as conn:
            known = conn.execute(select(tenants.c.id).where(tenants.c.id == tenant_id)).first()
        if known is None:
            raise ValueError(f"resume-run: unknown tenant {tenant_id!r}")
        _known_tenants.add(tenant_id)  # tenants are never deleted
    return tenant_id, rid, idx


def resume_run(tenant_id: str, run_id: Any, step_index: Any) -> str:
    """The resume-run handler: claim, then run until the next suspension or the end."""
    tenant_id, rid, idx = validate_request(tenant_id, run_id, step_index)
    try:
        with db.transaction() as conn:
            c = claim(conn, tenant_id, rid, idx)
    except VersionConflict:
        return ALREADY  # rule 5: another resume won the stream's version
    if c.outcome != RESUMED:
        return c.outcome
    assert c.token is not None and c.state is not None
    runner.execute(tenant_id, rid, c.token, c.state)
    return RESUMED


def resume_many(
    tenant_id: str,
    keys: list[tuple[str, int]],
    handoff: Callable[[str, str, str], None] | None = None,
) -> dict[tuple[str, int], str]:
    """resume-run for many validated (run, step) keys of one tenant: the due
    rows claimed in one transaction (rules 2-7 per row, as `claim`), the quick
    continuations finished together (`continue_runs`). A slow continuation is
    passed to `handoff(tenant, run, token)` when given, else run here. A row
    not due yet goes back to the timer ("not-due")."""
    out: dict[tuple[str, int], str] = dict.fromkeys(keys, ALREADY)  # rule 2: no row
    try:
        with db.transaction() as conn:
            pairs = lock_keys(conn, tenant_id, keys)
            now = clock.now()
            for p, _ in pairs:
                if p.wake_at > now:
                    out[(p.run_id, p.step_index)] = "not-due"
                    schedule_resume(conn, tenant_id, p.run_id, p.step_index, p.wake_at)
            due = [(p, row) for p, row in pairs if p.wake_at <= now]
            claims = claim_batch(conn, tenant_id, due)
    except VersionConflict:
        # another resume won a stream's version: decide row by row (rule 5)
        return {(rid, idx): resume_run(tenant_id, rid, idx) for rid, idx in keys}
    quick: list[RunState] = []
    for (p, _), c in zip(due, claims, strict=True):
        out[(p.run_id, p.step_index)] = c.outcome
        if c.outcome != RESUMED or c.state is None:
            continue
        if runner.quick(c.state):
            quick.append(c.state)
        elif handoff is not None:
            handoff(tenant_id, c.state.run_id, c.state.token)
        else:
            runner.execute(tenant_id, c.state.run_id, c.state.token, c.state)
    continue_runs(tenant_id, quick)
    return out


def continue_leased(tenant_id: str, run_id: str, token: str) -> str:
    """Continue a run whose lease `token` a claim took (the resume loop's
    hand-off): "lost" when the lease has moved on meanwhile."""
    return runner.execute(tenant_id, run_id, token)


def pending_wake_at(tenant_id: str, run_id: str, step_index: int) -> datetime | None:
    with db.reading() as conn:
        return conn.execute(
            select(workflow_run_pending.c.wake_at).where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id == run_id,
                workflow_run_pending.c.step_index == step_index,
            )
        ).scalar()


def _fail(conn: Connection, row: Any, step_index: int, reason: str, error: str) -> None:
    runs.append_run_event(
        conn, row, ev.RUN_FAILED, ev.run_failed(row.workflow_name, step_index, error, reason)
    )
    log.warning(
        "workflow run failed on resume",
        extra={"run_id": row.run_id, "workflow": row.workflow_name, "reason": reason},
    )


def advance(tenant_id: str, run_id: str) -> str:
    """Take the lease of a running run nobody holds (just started, retried by an
    operator, or its worker died) and run it from its last committed step."""
    with db.transaction() as conn:
        row = runs.lock_run(conn, tenant_id, run_id)
        now = clock.now()
        if row is None or row.status != "running":
            return "not-running"
        if row.lease_token is not None and row.lease_until is not None and row.lease_until > now:
            return "leased"
        wf = catalog.get(row.workflow_name)
        if wf is None or wf.fingerprint != row.fingerprint:
            _fail(
                conn,
                row,
                row.step_index,
                ev.REASON_DEFINITION_CHANGED,
                "workflow definition changed or not registered",
            )
            return FAILED
        trigger = get_event(conn, (row.trigger_event_ref or {}).get("eventId", ""))
        if trigger is None:
            _fail(
                conn,
                row,
                row.step_index,
                ev.REASON_TRIGGER_UNAVAILABLE,
                "trigger event unavailable",
            )
            return FAILED
        token = runs.new_token()
        conn.execute(
            update(workflow_runs)
            .where(workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id == run_id)
            .values(lease_token=token, lease_until=now + leases.LEASE, updated_at=now)
        )
    state = RunState.leased(row, token, wf, trigger)
    return runner.execute(tenant_id, run_id, token, state)


def advance_many(tenant_id: str, run_ids: list[str]) -> dict[str, str]:
    """`advance` for a batch of just-started runs: their leases taken in one
    transaction (rows another worker holds are skipped), then continued
    together (`drain.continue_runs`: quick runs finished in one commit)."""
    out: dict[str, str] = {}
    states: list[RunState] = []
    with db.transaction() as conn:
        q = select(workflow_runs).where(
            workflow_runs.c.tenant_id == tenant_id,
            workflow_runs.c.run_id.in_(sorted(set(run_ids))),
        )
        if not db.is_sqlite(conn):
            q = q.order_by(workflow_runs.c.run_id).with_for_update(skip_locked=True)
        rows = list(conn.execute(q))
        found = get_events(conn, {(r.trigger_event_ref or {}).get("eventId", "") for r in rows})
        now = clock.now()
        leases_taken: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:
            if row.status != "running":
                out[row.run_id] = "not-running"
                continue
            if row.lease_token is not None and row.lease_until and row.lease_until > now:
                out[row.run_id] = "leased"
                continue
            wf = catalog.get(row.workflow_name)
            trigger = found.get((row.trigger_event_ref or {}).get("eventId", ""))
            if wf is None or wf.fingerprint != row.fingerprint or trigger is None:
                out[row.run_id] = _refuse(conn, row, wf, trigger)
                continue
            token = runs.new_token()
            leases_taken[(tenant_id, row.run_id)] = dict(
                lease_token=token, lease_until=leases.lease_until(now)
            )
            states.append(RunState.leased(row, token, wf, trigger))
        update_runs(conn, leases_taken)
    continue_runs(tenant_id, states)
    out.update({st.run_id: "advanced" for st in states})
    return out


def _refuse(conn: Connection, row: Any, wf: Any, trigger: Any) -> str:
    if wf is None or wf.fingerprint != row.fingerprint:
        _fail(
            conn,
            row,
            row.step_index,
            ev.REASON_DEFINITION_CHANGED,
            "workflow definition changed or not registered",
        )
    else:
        _fail(conn, row, row.step_index, ev.REASON_TRIGGER_UNAVAILABLE, "trigger event unavailable")
    return FAILED
