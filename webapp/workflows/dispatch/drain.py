"""Draining due pending rows: claim a batch, continue the claimed runs.

Batches are claimed oldest first with FOR UPDATE SKIP LOCKED on PostgreSQL, so
parallel drains take disjoint rows; runs whose continuation needs no commit of
its own are finished together (`outcomes.finish_many`)."""

from __future__ import annotations

import logging
import time
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.exc import DBAPIError

from webapp import clock, db
from webapp.eventstore import VersionConflict
from webapp.workflows.dispatch import signals as timers
from webapp.workflows.engine import heartbeat as leases
from webapp.workflows.engine import run_loop as runner
from webapp.workflows.engine import stops as outcomes
from webapp.workflows.engine.claims import RESUMED, Claim, claim, claim_batch
from webapp.workflows.engine.run_state import Outcome, RunState
from webapp.workflows.store.tables import workflow_run_pending, workflow_runs

log = logging.getLogger("webapp.workflows")

# Rows per claim transaction. Each batch costs about the same 16 statements
# and 2 commits whatever its size, so larger batches drain faster; the append
# lock is held from a batch's append to its commit, which grows with the size.
BATCH = 250

# PostgreSQL deadlock / serialization failure: the batch is simply tried again.
_RETRYABLE = ("40P01", "40001")


def _lock_due(conn: Connection, tenant_id: str, limit: int) -> tuple[int, list[Any]]:
    """Up to `limit` due rows, oldest first, with their runs rows. On PostgreSQL
    both are taken FOR UPDATE SKIP LOCKED, so parallel drains take disjoint rows
    and a drain never waits for a row lock (only, at the end, for the append
    lock). Should a runs row be busy (a cancel, a trigger), the due rows are
    given back and only the runs we hold are locked again, so we never keep a
    pending row whose runs row another transaction holds (which could deadlock
    with its inline delete of that pending row).
    Returns (rows found, pairs)."""
    q = (
        select(workflow_run_pending)
        .where(
            workflow_run_pending.c.tenant_id == tenant_id,
            workflow_run_pending.c.wake_at < clock.now(),
        )
        .order_by(workflow_run_pending.c.wake_at)
        .limit(limit)
    )
    sqlite = db.is_sqlite(conn)
    if sqlite:
        pend = list(conn.execute(q))
        rows = _runs(conn, tenant_id, {p.run_id for p in pend}, lock=False)
        return len(pend), [(p, rows.get(p.run_id)) for p in pend]
    sp = conn.begin_nested()
    pend = list(conn.execute(q.with_for_update(skip_locked=True)))
    rows = _runs(conn, tenant_id, {p.run_id for p in pend}, lock=True)
    if all(p.run_id in rows for p in pend):
        sp.commit()
        return len(pend), [(p, rows[p.run_id]) for p in pend]
    sp.rollback()  # gives back every lock taken since the savepoint
    rows = _runs(conn, tenant_id, set(rows), lock=True)
    again = list(
        conn.execute(
            select(workflow_run_pending)
            .where(
                workflow_run_pending.c.tenant_id == tenant_id,
                workflow_run_pending.c.run_id.in_(sorted(rows)),
                workflow_run_pending.c.wake_at < clock.now(),
            )
            .order_by(workflow_run_pending.c.wake_at)
            .with_for_update(skip_locked=True)
        )
    )
    return len(pend), [(p, rows[p.run_id]) for p in again]


def _runs(conn: Connection, tenant_id: str, run_ids: set[str], lock: bool) -> dict[str, Any]:
    if not run_ids:
        return {}
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id, workflow_runs.c.run_id.in_(sorted(run_ids))
    )
    if lock:
        q = q.order_by(workflow_runs.c.run_id).with_for_update(skip_locked=True)
    return {r.run_id: r for r in conn.execute(q)}


def drain_batch(tenant_id: str, limit: int = BATCH) -> int:
    """Claim up to `limit` due rows of a tenant, oldest first, in one transaction
    (FOR UPDATE SKIP LOCKED on PostgreSQL, so parallel drains take disjoint rows),
    then continue the claimed runs: those that reach their next stop without a
    commit of their own are finished together in one more transaction, the
    others run one by one. One failing row is logged; the rest continue.
    Returns the number of due rows found (a full batch means: go on)."""
    claims: list[Claim] = []
    found = 0
    keys: list[tuple[str, int]] = []
    for attempt in range(3):
        try:
            with db.transaction() as conn:
                found, pairs = _lock_due(conn, tenant_id, limit)
                keys = [(p.run_id, p.step_index) for p, _ in pairs]
                claims = claim_batch(conn, tenant_id, pairs)
            break
        except VersionConflict:
            log.warning("batch claim conflicted; trying again", extra={"attempt": attempt})
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) not in _RETRYABLE:
                log.exception("batch claim failed; claiming row by row")
                claims = _claim_each(tenant_id, keys)
                break
            log.warning("batch claim deadlocked; trying again", extra={"attempt": attempt})
    else:
        claims = _claim_each(tenant_id, keys)
    continue_runs(tenant_id, [c.state for c in claims if c.outcome == RESUMED and c.state])
    return found


def _claim_each(tenant_id: str, keys: list[tuple[str, int]]) -> list[Claim]:
    """The slow path after a failed batch: each row in its own transaction, one
    failing row logged while the rest continue."""
    out = []
    for run_id, step_index in keys:
        try:
            with db.transaction() as conn:
                out.append(claim(conn, tenant_id, run_id, step_index))
        except Exception:
            log.exception(
                "resume dispatch failed", extra={"run_id": run_id, "step_index": step_index}
            )
    return out


def continue_runs(tenant_id: str, states: list[RunState]) -> None:
    """Run claimed runs on: the quick ones in memory, committed together."""
    with leases.heartbeat(tenant_id, [(st.run_id, st.token) for st in states]):
        _continue(tenant_id, states)


def _continue(tenant_id: str, states: list[RunState]) -> None:
    stops: list[Outcome] = []
    slow: list[RunState] = []
    for st in states:
        if not runner.quick(st):
            slow.append(st)
            continue
        r = runner.run(st)
        if isinstance(r, Outcome):
            stops.append(r)
    try:
        outcomes.finish_many(tenant_id, stops)
    except Exception:
        # Infrastructure trouble: the leases expire and the sweep picks them up.
        log.exception("resumed runs failed to continue", extra={"runs": len(stops)})
    for st in slow:
        try:
            runner.execute(tenant_id, st.run_id, st.token, st)
        except Exception:
            log.exception("resumed run failed to continue", extra={"run_id": st.run_id})


DRAIN_BUDGET_S = 60.0  # well under the RQ job timeout; a continuation job takes over


def drain(tenant_id: str, helpers: bool = True, budget_s: float = DRAIN_BUDGET_S) -> int:
    """Drain due rows, continuing at once while a batch was full; a full batch
    also asks for a helper drain so other workers share a backlog. After
    `budget_s` a still-full backlog is handed to a fresh drain job."""
    total = 0
    deadline = time.monotonic() + budget_s
    while True:
        n = drain_batch(tenant_id)
        total += n
        if n < BATCH:
            return total
        if helpers:
            timers.request_helper(tenant_id)
        if time.monotonic() > deadline:
            timers.request_drain(tenant_id)
            return total
