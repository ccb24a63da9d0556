"""Resuming and advancing runs: claim (`claims`), then continue the claimed
runs under the leases the claim took. The quick continuations (those that
reach their next stop without a commit of their own) are run ahead of the
claim and commit with it (`settle_ahead`); those the claim could not take so
are finished together in one transaction (`stops.finish_many`); the others run one by one, or are
handed to another worker (`handoff`) so one slow run never holds up the next.

Every entry ends here: the resume-run job (`resume_run`), the resume loop
(`resume_many`), the drain (`continue_runs` after its own claim), and
`advance` / `advance_many` for running runs nobody holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import select

from webapp.core import db
from webapp.eventstore import VersionConflict
from webapp.eventstore.tables import tenants
from webapp.workflows.engine import claims, heartbeat, run_loop, settle_ahead, stops
from webapp.workflows.engine.resume_rules import ResumeResult, validate
from webapp.workflows.engine.run_state import RunState, Stop
from webapp.workflows.store import leases

log = logging.getLogger("webapp.workflows")

Handoff = Callable[[str, str, str], None]  # (tenant, run, lease token)

_known_tenants: set[str] = set()


def validate_request(tenant_id: Any, run_id: Any, step_index: Any) -> tuple[str, str, int]:
    """Rule 1, before anything else in every entry (job, loop, CLI): a known
    tenant, a UUID run id, an integer step index >= 0. ValueError names what
    is wrong; nothing has been read or written for the run.
    Returns (tenant, run, step)."""
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


def resume_run(tenant_id: Any, run_id: Any, step_index: Any) -> str:
    """resume-run for one (run, step): rule 1 (ValueError), claim, then run
    until the next suspension or the end."""
    tenant_id, run_id, step_index = validate_request(tenant_id, run_id, step_index)
    return resume_many(tenant_id, [(run_id, step_index)])[(run_id, step_index)]


def resume_requests(
    requests: list[tuple[Any, Any, Any]], handoff: Handoff | None = None
) -> dict[tuple[str, str, int], str]:
    """resume-run for many (tenant, run, step) requests: each checked against
    rule 1 (a refused one is logged and dropped), then one claim transaction
    per tenant (`resume_many`)."""
    by_tenant: dict[str, set[tuple[str, int]]] = {}
    for request in requests:
        try:
            tenant_id, run_id, step = validate_request(*request)
        except ValueError as exc:
            log.warning("resume request refused", extra={"error": str(exc)})
            continue
        by_tenant.setdefault(tenant_id, set()).add((run_id, step))
    out: dict[tuple[str, str, int], str] = {}
    for tenant_id, keys in by_tenant.items():
        done = resume_many(tenant_id, sorted(keys), handoff)
        out.update({(tenant_id, run_id, step): v for (run_id, step), v in done.items()})
    return out


def resume_many(
    tenant_id: str, keys: list[tuple[str, int]], handoff: Handoff | None = None
) -> dict[tuple[str, int], str]:
    """resume-run for many validated (run, step) keys of one tenant: the due
    rows claimed in one transaction, the quick continuations finished
    together, a slow one passed to `handoff(tenant, run, token)` when given,
    else run here. A row not due yet goes back to its timer ("not-due")."""
    out: dict[tuple[str, int], str] = dict.fromkeys(keys, ResumeResult.ALREADY)  # rule 2
    ahead = settle_ahead.of_claims(tenant_id, keys)
    try:
        with db.transaction() as conn:
            early, due, claimed = claims.claim_due(conn, tenant_id, keys, ahead)
    except VersionConflict:
        if len(keys) == 1:
            return out  # rule 5: another resume won the stream's version
        out = {}
        for key in keys:  # decide row by row
            out.update(resume_many(tenant_id, [key], handoff))
        return out
    out.update({(p.run_id, p.step_index): ResumeResult.NOT_DUE for p in early})
    states: list[RunState] = []
    for (p, _), c in zip(due, claimed, strict=True):
        out[(p.run_id, p.step_index)] = c.result
        if c.result == ResumeResult.RESUMED and c.state is not None:
            states.append(c.state)
    continue_runs(tenant_id, states, handoff)
    return out


def advance(tenant_id: str, run_id: str, dead: Collection[str] = ()) -> str:
    """Take the lease of a running run nobody holds (or whose holder is one of
    the `dead` and missed its renewals) and run it from its last committed
    step: its run result, or why not (leased, not-running, failed)."""
    out, states = claims.take_leases(tenant_id, [run_id], dead=dead)
    if not states:
        return out.get(run_id, ResumeResult.LEASED)  # skipped: another holds its row
    return run_loop.execute(tenant_id, run_id, states[0].token, states[0])


def advance_many(
    tenant_id: str, run_ids: list[str], handoff: Handoff | None = None
) -> dict[str, str]:
    """`advance` for a batch of just-started runs, continued together (a slow
    one passed to `handoff` when given)."""
    out, states = claims.take_leases(tenant_id, run_ids, settle_ahead.of_leases(tenant_id, run_ids))
    continue_runs(tenant_id, states, handoff)
    return out


def continue_leased(tenant_id: str, run_id: str, token: str) -> str:
    """Continue a run whose lease `token` a claim took (a hand-off): "lost"
    when the lease has moved on meanwhile. The lease names this process its
    holder first: the claim named the claiming worker, which may be alive
    while this one dies mid-step, and a live holder is never taken over."""
    leases.renew(tenant_id, [(run_id, token)], heartbeat.lease_until(), heartbeat.holder())
    return run_loop.execute(tenant_id, run_id, token)


def continue_runs(tenant_id: str, states: list[RunState], handoff: Handoff | None = None) -> None:
    """Run claimed runs on: the quick ones in memory, committed together; the
    slow ones handed off, or run here one by one. A failing run is logged and
    left to its lease; the rest go on."""
    quick: list[RunState] = []
    slow: list[RunState] = []
    for st in states:
        (quick if run_loop.quick(st) else slow).append(st)
    if handoff is not None:  # only a run whose next step is cheap goes on here
        for st in slow:
            if not run_loop.stops_next(st):
                handoff(tenant_id, st.run_id, st.token)
        slow = [st for st in slow if run_loop.stops_next(st)]
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
