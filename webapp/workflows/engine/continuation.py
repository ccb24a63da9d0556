"""Resuming and advancing runs: claim (`claims`), then continue the claimed
runs under the leases the claim took. The quick continuations (those that
reach their next stop without a commit of their own) are finished together in
one transaction (`stops.finish_many`); the others run one by one, or are
handed to another worker (`handoff`) so one slow run never holds up the next.

Every entry ends here: the resume-run job (`resume_run`), the resume loop
(`resume_many`), the drain (`continue_runs` after its own claim), and
`advance` / `advance_many` for running runs nobody holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from webapp import clock, db
from webapp.eventstore import VersionConflict
from webapp.workflows.engine import claims, heartbeat, run_loop, stops
from webapp.workflows.engine.resume_rules import ResumeResult
from webapp.workflows.engine.run_state import RunState, Stop
from webapp.workflows.store import wake_signal

log = logging.getLogger("webapp.workflows")

Handoff = Callable[[str, str, str], None]  # (tenant, run, lease token)


def resume_run(tenant_id: Any, run_id: Any, step_index: Any) -> str:
    """resume-run for one (run, step): rule 1 (ValueError), claim, then run
    until the next suspension or the end."""
    tenant_id, run_id, step_index = claims.validate_request(tenant_id, run_id, step_index)
    return resume_many(tenant_id, [(run_id, step_index)])[(run_id, step_index)]


def resume_many(
    tenant_id: str, keys: list[tuple[str, int]], handoff: Handoff | None = None
) -> dict[tuple[str, int], str]:
    """resume-run for many validated (run, step) keys of one tenant: the due
    rows claimed in one transaction, the quick continuations finished
    together, a slow one passed to `handoff(tenant, run, token)` when given,
    else run here. A row not due yet goes back to its timer ("not-due")."""
    out: dict[tuple[str, int], str] = dict.fromkeys(keys, ResumeResult.ALREADY)  # rule 2
    try:
        with db.transaction() as conn:
            pairs = claims.claim_keys(conn, tenant_id, keys)
            now = clock.now()
            for p, _ in pairs:
                if p.wake_at > now:
                    out[(p.run_id, p.step_index)] = ResumeResult.NOT_DUE
                    wake_signal.signal(conn, tenant_id, p.run_id, p.step_index, p.wake_at)
            due = [(p, row) for p, row in pairs if p.wake_at <= now]
            claimed = claims.claim(conn, tenant_id, due)
    except VersionConflict:
        if len(keys) == 1:
            return out  # rule 5: another resume won the stream's version
        out = {}
        for key in keys:  # decide row by row
            out.update(resume_many(tenant_id, [key], handoff))
        return out
    states: list[RunState] = []
    for (p, _), c in zip(due, claimed, strict=True):
        out[(p.run_id, p.step_index)] = c.result
        if c.result == ResumeResult.RESUMED and c.state is not None:
            states.append(c.state)
    continue_runs(tenant_id, states, handoff)
    return out


def advance(tenant_id: str, run_id: str) -> str:
    """Take the lease of a running run nobody holds and run it from its last
    committed step: its run result, or why not (leased, not-running, failed)."""
    out, states = claims.take_leases(tenant_id, [run_id])
    if not states:
        return out.get(run_id, ResumeResult.LEASED)  # skipped: another holds its row
    return run_loop.execute(tenant_id, run_id, states[0].token, states[0])


def advance_many(tenant_id: str, run_ids: list[str]) -> dict[str, str]:
    """`advance` for a batch of just-started runs, continued together."""
    out, states = claims.take_leases(tenant_id, run_ids)
    continue_runs(tenant_id, states)
    return out


def continue_leased(tenant_id: str, run_id: str, token: str) -> str:
    """Continue a run whose lease `token` a claim took (a hand-off): "lost"
    when the lease has moved on meanwhile."""
    return run_loop.execute(tenant_id, run_id, token)


def continue_runs(tenant_id: str, states: list[RunState], handoff: Handoff | None = None) -> None:
    """Run claimed runs on: the quick ones in memory, committed together; the
    slow ones handed off, or run here one by one. A failing run is logged and
    left to its lease; the rest go on."""
    quick = [st for st in states if run_loop.quick(st)]
    slow = [st for st in states if not run_loop.quick(st)]
    if handoff is not None:
        for st in slow:
            handoff(tenant_id, st.run_id, st.token)
        slow = []
    kept = quick + slow
    # every lease renewed until its run is done: a slow run waits its turn here
    with heartbeat.heartbeat(tenant_id, [(st.run_id, st.token) for st in kept]):
        stopped = [r for r in (run_loop.run(st) for st in quick) if isinstance(r, Stop)]
        try:
            stops.finish_many(tenant_id, stopped)
        except Exception:
            # Infrastructure trouble: the leases expire and the sweep picks them up.
            log.exception("resumed runs failed to continue", extra={"runs": len(stopped)})
        for st in slow:
            try:
                run_loop.execute(tenant_id, st.run_id, st.token, st)
            except Exception:
                log.exception("resumed run failed to continue", extra={"run_id": st.run_id})
