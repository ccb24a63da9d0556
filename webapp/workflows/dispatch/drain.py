"""Draining due pending rows: claim a batch, continue the claimed runs.

Batches are claimed oldest first (`store.runs.lock_due`: FOR UPDATE SKIP
LOCKED on PostgreSQL, so parallel drains take disjoint rows) through the one
claim path (`engine.resume.claim`); runs whose continuation needs no commit
of its own are finished together (`engine.resume.continue_runs`)."""

from __future__ import annotations

import logging
import time

from sqlalchemy.exc import DBAPIError

from webapp.core import db
from webapp.eventstore import VersionConflict
from webapp.workflows.dispatch import signals
from webapp.workflows.engine import resume
from webapp.workflows.engine.resume import Claim, ResumeResult
from webapp.workflows.store import runs

log = logging.getLogger("webapp.workflows")

# Rows per claim transaction. Each batch costs about the same 16 statements
# and 2 commits whatever its size, so larger batches drain faster; the append
# lock is held from a batch's append to its commit, which grows with the size.
BATCH = 250

# PostgreSQL deadlock / serialization failure: the batch is simply tried again.
_RETRYABLE = ("40P01", "40001")


def drain_batch(tenant_id: str, limit: int = BATCH) -> int:
    """Claim up to `limit` due rows of a tenant, oldest first, in one
    transaction, then continue the claimed runs. One failing row is logged;
    the rest continue. Returns the number of due rows found (a full batch
    means: go on)."""
    claimed: list[Claim] = []
    found = 0
    keys: list[tuple[str, int]] = []
    for attempt in range(3):
        try:
            with db.transaction() as conn:
                found, pairs = runs.lock_due(conn, tenant_id, limit)
                keys = [(p.run_id, p.step_index) for p, _ in pairs]
                claimed = resume.claim(conn, tenant_id, pairs)
            break
        except VersionConflict:
            log.warning("batch claim conflicted; trying again", extra={"attempt": attempt})
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) not in _RETRYABLE:
                log.exception("batch claim failed; claiming row by row")
                claimed = _claim_each(tenant_id, keys)
                break
            log.warning("batch claim deadlocked; trying again", extra={"attempt": attempt})
    else:
        claimed = _claim_each(tenant_id, keys)
    states = [c.state for c in claimed if c.result == ResumeResult.RESUMED and c.state]
    resume.continue_runs(tenant_id, states)
    return found


def _claim_each(tenant_id: str, keys: list[tuple[str, int]]) -> list[Claim]:
    """The slow path after a failed batch: each row in its own transaction, one
    failing row logged while the rest continue."""
    out = []
    for run_id, step_index in keys:
        try:
            with db.transaction() as conn:
                out += resume.claim_due(conn, tenant_id, [(run_id, step_index)])[2]
        except Exception:
            log.exception(
                "resume dispatch failed", extra={"run_id": run_id, "step_index": step_index}
            )
    return out


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
            signals.request_helper(tenant_id)
        if time.monotonic() > deadline:
            signals.request_drain(tenant_id)
            return total
