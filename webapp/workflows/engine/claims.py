"""The claim: the one writer around the resume rules (`resume_rules`), used by
every entry that resumes or leases a run (the resume-run job, the resume loop,
the drain of the minute sweep, advance).

`claim` decides rules 2-7 for a batch of (pending row, runs row) pairs the
caller locked, and one append writes every step.resumed (and any run-failed)
at its run's expected version, with the new leases, their projection applied
set-based in the same transaction. `take_leases` does the same for running
runs nobody holds. The continuation (running the steps) happens after that
transaction commits, under the lease the claim took (`continuation`), unless
it was run ahead (`settle_ahead`): then the claim commits it too, when it
decides the same on the same row (`Ahead.fits`). What the claim writes is
`claim_writes`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from webapp.core import clock, db
from webapp.eventstore import Event, get_events
from webapp.workflows import host
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import Workflow
from webapp.workflows.engine import active_slots, heartbeat
from webapp.workflows.engine.claim_writes import ClaimWrites
from webapp.workflows.engine.resume_rules import (
    Decision,
    ResumeResult,
    decide,
    decide_lease,
    wanted_events,
)
from webapp.workflows.engine.run_state import RunState, Stop
from webapp.workflows.store import (
    children,
    definitions,
    locks,
    rates,
    wake_signal,
)
from webapp.workflows.store import rows as rows_mod
from webapp.workflows.store import run_events as ev

log = logging.getLogger("webapp.workflows")


@dataclass(frozen=True)
class Claim:
    result: ResumeResult
    reason: str | None = None
    state: RunState | None = None  # RESUMED / ADVANCED: what the run goes on with
    settled: str | None = None  # its continuation, run ahead, committed with the claim


@dataclass(frozen=True)
class Ahead:
    """A run's continuation run ahead of its claim or lease (`settle_ahead`),
    from the runs row at `version` and the decision `decision`: the claim
    commits its stop with it only when it decides the same on the same row."""

    version: int
    decision: Decision
    stop: Stop
    # The events it was decided with (trigger, awaited event ...), by id. Events
    # are never changed once appended, so the claim uses them instead of
    # reading them again, whether or not the continuation fits.
    events: Mapping[str, Any] = field(default_factory=dict)

    def fits(self, row: Any, d: Decision) -> bool:
        return row.version == self.version and d == self.decision


def definition_of(row: Any) -> Workflow | None:
    """The registered definition of the run's version."""
    return catalog.get(row.workflow_name, row.definition_version)


def old_shapes(conn: Connection, rows: list[Any]) -> dict[str, Any]:
    """The stored shapes of the runs whose definition changed (read only then)."""
    changed = set()
    for row in rows:
        wf = definition_of(row) if row is not None else None
        if wf is not None and wf.fingerprint != row.fingerprint:
            changed.add(row.fingerprint)
    return definitions.shapes(conn, changed) if changed else {}


def ref_of(ref: Any) -> str:
    return str((ref or {}).get("eventId", ""))


def found_events(
    conn: Connection, ids: set[str], known: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The events of these ids; those in `known` (read earlier: events never
    change) are not read again."""
    have = {i: known[i] for i in ids if known and i in known}
    rest = ids - have.keys()
    return {**have, **get_events(conn, rest)} if rest else have


def known_events(ahead: Mapping[Any, Ahead] | None) -> dict[str, Any]:
    return {i: e for pre in (ahead or {}).values() for i, e in pre.events.items()}


def children_of(pairs: list[Any], found: dict[str, Any]) -> set[str]:
    """The settled children whose waiting parents these pairs wake."""
    out = set()
    for p, _ in pairs:
        e = found.get(ref_of(p.trigger_event_ref))
        if p.suspension_event_type == ev.CHILD_STARTED and e is not None:
            out.add(str(e.payload.get("childRunId")))
    return out


def decisions(
    pairs: list[Any], found: dict[str, Any], shapes: dict[str, Any], kids: dict[str, Any]
) -> list[tuple[Workflow | None, Decision]]:
    """Each pair's decision (one claim per run and batch: a second row of a
    run already decided is already-resumed)."""
    out: list[tuple[Workflow | None, Decision]] = []
    seen: set[str] = set()
    for p, row in pairs:
        if row is None or p.run_id in seen:
            out.append((None, Decision(ResumeResult.ALREADY)))
            continue
        wf = definition_of(row)
        d = decide(p, row, wf, found, shapes.get(row.fingerprint), kids)
        if d.result != ResumeResult.ALREADY:
            seen.add(p.run_id)
        out.append((wf, d))
    return out


def claim(
    conn: Connection,
    tenant_id: str,
    pairs: list[Any],
    ahead: Mapping[tuple[str, int], Ahead] | None = None,
) -> list[Claim]:
    """Rules 2-7 for (pending, runs row) pairs the caller locked, inside the
    caller's transaction: one Claim per pair. A pair with a fitting `ahead`
    entry is settled here too (`Claim.settled`)."""
    wanted = set().union(*(wanted_events(p, row) for p, row in pairs if row))
    found = found_events(conn, wanted, known_events(ahead))
    shapes = old_shapes(conn, [row for _, row in pairs])
    kids = children.results_of(conn, tenant_id, children_of(pairs, found))
    writes = ClaimWrites(tenant_id)
    out: list[Claim] = []
    decided = active_slots.admit_resumes(
        conn, tenant_id, pairs, decisions(pairs, found, shapes, kids)
    )
    for (p, row), (wf, d) in zip(pairs, decided, strict=True):
        if d.result in (ResumeResult.ALREADY, ResumeResult.NO_SLOT):
            out.append(Claim(d.result))
            continue
        if d.result == ResumeResult.STARTED:  # decided under its rate key's lock, now
            started = rates.start_due(conn, row)
            out.append(Claim(ResumeResult.STARTED if started else ResumeResult.NOT_DUE))
            continue
        if d.result == ResumeResult.RESUMED:
            _resumed(conn, row.workflow_name, p, found)
        at = p.step_index if p.step_index >= 0 else row.step_index  # a control: where it is
        token = writes.add(row, at, d, p.retry_attempt, wf)
        pre = (ahead or {}).get((p.run_id, p.step_index))
        if token is not None and pre is not None and pre.fits(row, d):
            writes.settle(row, pre.stop)
            out.append(Claim(d.result, d.reason, settled=pre.stop.status))
            continue
        state = None
        if token is not None and wf is not None:  # RESUMED: decide found wf and trigger
            state = state_of(tenant_id, row, token, wf, d, found)
        out.append(Claim(d.result, d.reason, state))
    writes.write(conn)
    return out


def claim_due(
    conn: Connection,
    tenant_id: str,
    keys: list[tuple[str, int]],
    ahead: Mapping[tuple[str, int], Ahead] | None = None,
) -> tuple[list[Any], list[Any], list[Claim]]:
    """Claim the pending rows of these (run, step) keys that are due: returns
    (pending rows not due yet, due pairs, their Claims). A row not due yet is
    signalled again for its time (its timer may have fired early)."""
    pairs = locks.lock_keys(conn, tenant_id, keys)
    now = clock.now()
    early = [p for p, _ in pairs if p.wake_at > now]
    for p in early:
        if rows_mod.timed(p.wake_at):  # not a row waiting for its event or a slot
            wake_signal.signal(conn, tenant_id, p.run_id, p.step_index, p.wake_at)
    due = [(p, row) for p, row in pairs if p.wake_at <= now]
    return early, due, claim(conn, tenant_id, due, ahead)


def take_leases(
    tenant_id: str,
    run_ids: list[str],
    ahead: Mapping[str, Ahead] | None = None,
    dead: Collection[str] = (),
) -> tuple[dict[str, str], list[RunState]]:
    """Lease running runs nobody holds (just started, retried by an operator,
    or their worker died: its lease expired, or it is one of the `dead`
    holders and missed its renewals), in one transaction: rows another
    transaction holds are skipped. A run with a fitting `ahead` entry settles
    in the same transaction (its result is then its stop's). Returns each
    run's result and the states to continue."""
    out: dict[str, str] = {}
    states: list[RunState] = []
    with db.transaction() as conn:
        rows = locks.lock_runs(conn, tenant_id, run_ids, skip_locked=True)
        refs = {ref_of(r.trigger_event_ref) for r in rows.values()} - {""}
        found = found_events(conn, refs, known_events(ahead))
        shapes = old_shapes(conn, list(rows.values()))
        writes = ClaimWrites(tenant_id)
        now = clock.now()
        missed_before = heartbeat.unrenewed_before(now)
        for row in rows.values():
            wf = definition_of(row)
            trigger = found.get(ref_of(row.trigger_event_ref))
            d = decide_lease(
                row, wf, trigger, now, shapes.get(row.fingerprint), dead, missed_before
            )
            out[row.run_id] = d.result
            token = writes.add(row, row.step_index, d, wf=wf)
            pre = (ahead or {}).get(row.run_id)
            if token is not None and pre is not None and pre.fits(row, d):
                writes.settle(row, pre.stop)
                out[row.run_id] = pre.stop.status
                continue
            if token is not None and wf is not None and trigger is not None:
                states.append(RunState.leased(row, token, wf, trigger))
        writes.write(conn)
    return out, states


def state_of(
    tenant_id: str, row: Any, token: str, wf: Workflow, d: Decision, found: dict[str, Any]
) -> RunState:
    trigger = found[ref_of(row.trigger_event_ref)]
    return RunState(
        tenant_id,
        row.run_id,
        token,
        wf,
        trigger,
        d.step_index,
        d.attempt,
        d.results,
        wf.fingerprint,
    )


def _resumed(conn: Connection, workflow: str, pending: Any, found: dict[str, Event]) -> None:
    """Tell the host how late this resume is, once the claim commits: a step
    woken by its awaited event, since that event's append; one woken by its
    time (a wait, a retry, a wait-for-event's timeout), since it was due."""
    awaited = None
    if pending.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and pending.trigger_event_ref:
        awaited = found.get(str(pending.trigger_event_ref.get("eventId", "")))
    cause, since = ("event", awaited.recorded_at) if awaited else ("timer", pending.wake_at)
    seconds = max(0.0, (clock.now() - since).total_seconds())
    on_resume = host.current().on_resume
    db.after_commit(conn, lambda: on_resume(workflow, cause, seconds))
