"""Settle ahead: a run whose continuation needs no commit of its own (pure
steps up to a return, a failure or a wait, `run_loop.quick`) is run in memory
before its claim or lease is taken, so the transaction that takes the run
commits its continuation too: one transaction where there were two (the claim,
then the finish).

The continuation runs outside any transaction, from rows read without a lock:
user code never runs while a runs row is locked (PostgreSQL) or while the one
writer's lock is held (SQLite). The claim then decides as always, under its
locks, and commits the precomputed stop only if it decided the same on a row
still at the version the continuation started from (`claims.Ahead.fits`);
otherwise the work is dropped and the run goes on the usual way. Only pure
steps run ahead, so dropping their work loses nothing and repeats no effect.

A worker killed while running ahead has written and locked nothing: the run
is where it was, for the next claim or the lease check.
"""

from __future__ import annotations

from typing import Any

from webapp.core import clock, db
from webapp.workflows.definition.model import Workflow
from webapp.workflows.engine import claims, run_loop
from webapp.workflows.engine.claims import Ahead
from webapp.workflows.engine.resume_rules import ResumeResult, decide_lease, wanted_events
from webapp.workflows.engine.run_state import RunState
from webapp.workflows.store import children, locks


def _current(row: Any) -> Workflow | None:
    """The run's definition when it runs ahead: registered, unchanged where
    the run stands (a changed one is the claim's to adopt), and without a
    concurrency limit (the claim's slot admission decides those)."""
    wf = claims.definition_of(row)
    if wf is None or wf.fingerprint != row.fingerprint:
        return None
    return wf if wf.slot_limit is None else None


def of_leases(tenant_id: str, run_ids: list[str]) -> dict[str, Ahead]:
    """For `claims.take_leases`: the quick continuations of these running runs."""
    with db.reading() as conn:
        rows = locks.lock_runs(conn, tenant_id, run_ids, lock=False)
        quick = {
            rid: (row, wf)
            for rid, row in rows.items()
            if (wf := _current(row)) is not None and run_loop.quick_at(wf, row.step_index)
        }
        refs = {claims.ref_of(row.trigger_event_ref) for row, _ in quick.values()} - {""}
        found = claims.found_events(conn, refs)
    now = clock.now()
    out: dict[str, Ahead] = {}
    for rid, (row, wf) in quick.items():
        trigger = found.get(claims.ref_of(row.trigger_event_ref))
        d = decide_lease(row, wf, trigger, now)
        if d.result != ResumeResult.ADVANCED or d.adopt or trigger is None:
            continue
        stop = run_loop.stretch(RunState.leased(row, "", wf, trigger))
        if stop is not None:
            out[rid] = Ahead(row.version, d, stop, {trigger.id: trigger})
    return out


def of_claims(tenant_id: str, keys: list[tuple[str, int]]) -> dict[tuple[str, int], Ahead]:
    """For `claims.claim_due`: the quick continuations of the runs these due
    (run, step) rows resume."""
    now = clock.now()
    with db.reading() as conn:
        pairs = [
            (p, row)
            for p, row in locks.read_keys(conn, tenant_id, keys)
            if row is not None and p.wake_at <= now and _current(row) is not None
        ]
        if not pairs:
            return {}
        found = claims.found_events(conn, set().union(*(wanted_events(p, r) for p, r in pairs)))
        kids = children.results_of(conn, tenant_id, claims.children_of(pairs, found))
    out: dict[tuple[str, int], Ahead] = {}
    for (p, row), (wf, d) in zip(pairs, claims.decisions(pairs, found, {}, kids), strict=True):
        if d.result != ResumeResult.RESUMED or wf is None:
            continue
        stop = run_loop.stretch(claims.state_of(tenant_id, row, "", wf, d, found))
        if stop is not None:
            used = {i: found[i] for i in wanted_events(p, row) if i in found}
            out[(p.run_id, p.step_index)] = Ahead(row.version, d, stop, used)
    return out
