"""Resuming a run: the resume rules, the claim that applies them, what the
claim writes, the continuations run ahead of it, and continuing the runs it
took. Every entry ends here: the resume-run job (`resume_run`), the resume
loop (`resume_requests` / `resume_many`), the drain (`continue_runs` after its
own claim), and `advance` / `advance_many` for running runs nobody holds.

One concept: taking a waiting or abandoned run and handing it on. Its parts
are read in the order a resume goes through them, and they are kept together
because each decides with what the one before it read:

1. **The rules** (`decide`, `decide_lease`), pure functions of what the claim
   read: no database, no clock of their own.
2. **The claim** (`claim`, `claim_due`, `take_leases`): it locks the rows,
   looks the events and definitions up once, asks the rules, admits
   `slot="active"` resumes into a free slot, and one append writes every
   step.resumed (and any run-failed, run-cancelled, run-migrated) at its
   run's expected version with the new leases (`ClaimWrites`).
3. **Settle ahead** (`ahead_of_claims`, `ahead_of_leases`): a quick
   continuation is run in memory before the claim, from rows read without a
   lock, and commits with the claim when the claim decides the same on the
   same row (`Ahead.fits`).
4. **The continuation** (`resume_many`, `continue_runs`): the runs the claim
   took run on, the quick ones finished together (`stops.finish_many`), a slow
   one handed to another worker so one slow run never holds up the next.

resume-run (docs/workflows.md, "Resuming a run"):

1. the request names a UUID run and an integer step >= 0 (`validate`);
2. the step has a pending row (else already-resumed);
3. the run still waits there, at this attempt (else already-resumed);
4. the run's version is registered, and its definition is the one it
   suspended under or one it can go on with (`compat.continues`: nothing
   changed up to and including the waiting step; the claim then records
   run-migrated, automatic) (else run-failed: workflow_definition_changed,
   and no step.resumed);
5. the claim is step.resumed at the stream's version (the writer's append);
6. the trigger event, and for a wait-for-event the awaited event, exist (else
   step.resumed + run-failed: trigger_event_unavailable /
   awaited_event_unavailable);
7. the run continues at the next step with the waited step's result (a retry:
   the same step, next attempt; a wait woken by a signal or an update: the
   same step, which takes it, `store.messages`).

Settle ahead runs user code outside any transaction, from rows read without
a lock: user code never runs while a runs row is locked (PostgreSQL) or while
the one writer's lock is held (SQLite). Only pure steps run ahead, so
dropping their work loses nothing and repeats no effect; a worker killed
while running ahead has written and locked nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, select

from webapp.core import clock, db
from webapp.eventstore import Event, NewEvent, StreamId, VersionConflict, get_events
from webapp.eventstore.tables import tenants
from webapp.workflows import host
from webapp.workflows.definition import catalog, compat
from webapp.workflows.definition.model import Workflow
from webapp.workflows.engine import heartbeat, run_loop, stops
from webapp.workflows.engine.stops import RunState, Stop
from webapp.workflows.store import (
    batches,
    children,
    definitions,
    leases,
    pending,
    rates,
    runs,
    slots,
    tables,
    wake_signal,
)
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus

log = logging.getLogger("webapp.workflows")


# --- The rules -------------------------------------------------------------


class ResumeResult(StrEnum):
    """What resume-run, or taking a run's lease, answers."""

    RESUMED = "resumed"
    ALREADY = "already-resumed"
    FAILED = "failed"
    NOT_DUE = "not-due"
    ADVANCED = "advanced"  # a running run's lease taken again
    LEASED = "leased"  # its lease is held by a live worker
    NOT_RUNNING = "not-running"
    PAUSED = "paused"  # the run is paused: its pending row waits for the resume
    CANCELLED = "cancelled"  # a cancel-on event came: the run is cancelled
    NO_SLOT = "no-slot"  # slot="active": no free slot to resume into; it waits for one
    STARTED = "started"  # a queued run's planned start came (throttle, debounce)


@dataclass(frozen=True)
class Decision:
    result: ResumeResult
    claim: bool = False  # append step.resumed (rule 5) before anything else
    reason: str | None = None  # run-failed with this reason
    error: str | None = None
    step_index: int = 0  # where the run goes on (RESUMED)
    attempt: int = 1
    results: dict[str, Any] = field(default_factory=dict)
    adopt: bool = False  # the run goes on under a changed, compatible definition
    cancelled_by: str | None = None  # run-cancelled by this event (cancel-on)


def fits(
    wf: Workflow | None,
    fingerprint: str,
    old_shape: Mapping[str, Any] | None,
    step_index: int,
    waiting: bool,
) -> bool | None:
    """Rule 4: may a run under `fingerprint` go on with `wf` at this step?
    False: the same definition; True: a changed one it can adopt; None: no
    (not registered, or changed where the run has been; a run whose shape was
    never recorded only goes on under its own definition)."""
    if wf is None:
        return None
    if wf.fingerprint == fingerprint:
        return False
    if old_shape is not None and compat.continues(old_shape, wf.shape, step_index, waiting):
        return True
    return None


def validate(run_id: Any, step_index: Any) -> tuple[str, int]:
    """Rule 1: runId is a UUID, stepIndex an integer >= 0 (ValueError says which)."""
    try:
        rid = str(uuid.UUID(str(run_id)))
    except (ValueError, TypeError, AttributeError):
        raise ValueError(f"resume-run: runId must be a UUID, got {run_id!r}") from None
    if isinstance(step_index, bool) or not isinstance(step_index, int) or step_index < 0:
        raise ValueError(f"resume-run: stepIndex must be an integer >= 0, got {step_index!r}")
    return rid, step_index


def settled(row: Any, pending: Any) -> bool:
    """Rule 3: not waiting at this suspension any more. The runs row says
    exactly what replaying the stream would (the run events maintain it
    inline, and its version is the stream's): the run waits only while it is
    suspended at this step and, for a retry, at this attempt."""
    if row.status != RunStatus.SUSPENDED or row.step_index != pending.step_index:
        return True
    return bool(
        pending.suspension_event_type == ev.RETRY_SCHEDULED and row.attempt != pending.retry_attempt
    )


def wanted_events(pending: Any, row: Any) -> set[str]:
    """The event ids rule 6 reads for this pair."""
    ids = {ref_of(row.trigger_event_ref)}
    if pending.suspension_event_type in (ev.STEP_WAITING_FOR_EVENT, ev.CHILD_STARTED):
        ids.add(ref_of(pending.trigger_event_ref))
    return ids - {""}


def _failed(reason: str, error: str, claim: bool = True) -> Decision:
    return Decision(ResumeResult.FAILED, claim=claim, reason=reason, error=error)


def decide(
    pending: Any,
    row: Any,
    wf: Workflow | None,
    found: Mapping[str, Event],
    old_shape: Mapping[str, Any] | None = None,
    children: Mapping[str, Any] | None = None,
) -> Decision:
    """Rules 2-7 for one pending row and its runs row (None: gone), given the
    loaded definition of the run's version (None: not registered), the events
    found by id, the shape of the definition the run suspended under, and the
    stored results of settled children by run id (a parent waiting for one)."""
    if pending.step_index < 0:  # not a step: one of the run's controls
        return decide_control(pending, row)
    if row is None or settled(row, pending):  # rules 2, 3
        return Decision(ResumeResult.ALREADY)
    if row.paused_by is not None:  # kept for the resume, which signals it again
        return Decision(ResumeResult.PAUSED)
    fp = pending.definition_fingerprint or row.fingerprint
    adopt = fits(wf, fp, old_shape, pending.step_index, waiting=True)
    if wf is None or adopt is None:
        why = "is not registered" if wf is None else "definition changed since the run suspended"
        return _failed(
            ev.REASON_DEFINITION_CHANGED, f"workflow {row.workflow_name!r} {why}", claim=False
        )
    if ref_of(row.trigger_event_ref) not in found:  # rule 6
        return _failed(ev.REASON_TRIGGER_UNAVAILABLE, "trigger event unavailable")
    if pending.step_index >= len(wf.steps):
        return _failed(ev.REASON_DEFINITION_CHANGED, "step index out of range")
    if pending.suspension_event_type == ev.CHILD_STARTED:  # rule 7, a child settled
        return _child_settled(pending, row, wf, found, children or {}, adopt)
    if pending.suspension_event_type == ev.RETRY_SCHEDULED:  # rule 7, a retry
        return Decision(
            ResumeResult.RESUMED,
            claim=True,
            step_index=pending.step_index,
            attempt=int(pending.retry_attempt or 1),
            results=dict(row.results or {}),
            adopt=adopt,
        )
    if pending.suspension_event_type == ev.STEP_WAITING_FOR_MESSAGE and pending.trigger_event_ref:
        return Decision(  # a signal or an update came: the run takes it at the step
            ResumeResult.RESUMED,
            claim=True,
            step_index=pending.step_index,
            results=dict(row.results or {}),
            adopt=adopt,
        )
    results = dict(row.results or {})
    value: Any = None  # a wait, or a wait-for-event's / wait-for-message's timeout: empty
    if pending.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and pending.trigger_event_ref:
        awaited = found.get(ref_of(pending.trigger_event_ref))
        if awaited is None:
            return _failed(ev.REASON_AWAITED_UNAVAILABLE, "awaited event unavailable")
        value = awaited.payload
        results[ev.CONSUMED] = max(int(results.get(ev.CONSUMED, 0)), awaited.position)
    results[wf.steps[pending.step_index].name] = value
    return Decision(
        ResumeResult.RESUMED,
        claim=True,
        step_index=pending.step_index + 1,
        results=results,
        adopt=adopt,
    )


def _child_settled(
    pending: Any,
    row: Any,
    wf: Workflow,
    found: Mapping[str, Event],
    children: Mapping[str, Any],
    adopt: bool,
) -> Decision:
    """The parent goes on after its child's step with the child's return
    value; a child that failed or was cancelled marks the step (it raises
    there, so a retry around it can start a new child)."""
    settled = found.get(ref_of(pending.trigger_event_ref))
    if settled is None:
        return _failed(ev.REASON_AWAITED_UNAVAILABLE, "awaited event unavailable")
    i = pending.step_index
    results = dict(row.results or {})
    child_id = str(settled.payload.get("childRunId"))
    status = settled.payload.get("status")
    if status == RunStatus.COMPLETED:
        results[wf.steps[i].name] = dict(children.get(child_id) or {}).get("return")
        return Decision(
            ResumeResult.RESUMED, claim=True, step_index=i + 1, results=results, adopt=adopt
        )
    results[ev.CHILD_FAILED] = {"stepIndex": i, "runId": child_id, "status": status}
    return Decision(
        ResumeResult.RESUMED,
        claim=True,
        step_index=i,
        attempt=int(pending.retry_attempt or 1),
        results=results,
        adopt=adopt,
    )


def decide_control(pending: Any, row: Any) -> Decision:
    """A run's control row fell due: its deadline passed (run-failed,
    deadline_exceeded), its cancel-on event came (run-cancelled), or a
    queued run's planned start came (started, by `store.rates`). Only an
    open run; a paused one keeps it for the resume, like its timers."""
    if row is None or row.status not in ev.OPEN:
        return Decision(ResumeResult.ALREADY)
    if row.paused_by is not None:
        return Decision(ResumeResult.PAUSED)
    if pending.suspension_event_type == ev.DEADLINE:
        return _failed(ev.REASON_DEADLINE, "run deadline exceeded", claim=False)
    if pending.suspension_event_type == ev.START:
        queued = row.status == RunStatus.QUEUED
        return Decision(ResumeResult.STARTED if queued else ResumeResult.ALREADY)
    if pending.suspension_event_type == ev.CANCEL_ON and pending.trigger_event_ref:
        return Decision(ResumeResult.CANCELLED, cancelled_by=ref_of(pending.trigger_event_ref))
    return Decision(ResumeResult.ALREADY)


def abandoned(row: Any, dead: Collection[str], missed_before: datetime) -> bool:
    """A lease whose holder is dead (its liveness key is gone: `dead`) and that
    missed its renewals (it runs out before `missed_before`): taken over before
    it expires. Both must hold: a holder whose key lapsed but who still renews
    (a stalled Redis connection) keeps its lease."""
    return (
        row.lease_token is not None
        and row.lease_holder is not None
        and row.lease_holder in dead
        and row.lease_until is not None
        and row.lease_until < missed_before
    )


def decide_lease(
    row: Any,
    wf: Workflow | None,
    trigger: Event | None,
    now: datetime,
    old_shape: Mapping[str, Any] | None = None,
    dead: Collection[str] = (),
    missed_before: datetime | None = None,
) -> Decision:
    """May a running run be leased again (just started, retried by an operator,
    or its worker died)? Not while a live lease holds it (one not expired and
    not `abandoned` by a dead holder); failed when its definition changed
    where it has been (rule 4) or its trigger is gone."""
    if row is None or row.status != RunStatus.RUNNING:
        return Decision(ResumeResult.NOT_RUNNING)
    live = row.lease_token is not None and row.lease_until is not None and row.lease_until > now
    if live and not (missed_before is not None and abandoned(row, dead, missed_before)):
        return Decision(ResumeResult.LEASED)
    if row.paused_by is not None:
        return Decision(ResumeResult.PAUSED)
    adopt = fits(wf, row.fingerprint, old_shape, row.step_index, waiting=False)
    if wf is None or adopt is None:
        return _failed(
            ev.REASON_DEFINITION_CHANGED,
            "workflow definition changed or not registered",
            claim=False,
        )
    if trigger is None:
        return _failed(ev.REASON_TRIGGER_UNAVAILABLE, "trigger event unavailable", claim=False)
    return Decision(
        ResumeResult.ADVANCED,
        step_index=row.step_index,
        attempt=row.attempt,
        results=dict(row.results or {}),
        adopt=adopt,
    )


# --- What a claim writes ---------------------------------------------------


def failure(row: Any, step_index: int, reason: str, error: str) -> NewEvent:
    """The run-failed event of a run the rules refuse (logged once, here)."""
    log.warning(
        "workflow run failed on resume",
        extra={"run_id": row.run_id, "workflow": row.workflow_name, "reason": reason},
    )
    return NewEvent(ev.RUN_FAILED, ev.run_failed(row.workflow_name, step_index, error, reason))


def cancelled_by_event(row: Any, event_id: str) -> NewEvent:
    """run-cancelled by a cancel-on event (its id in the payload)."""
    log.info(
        "workflow run cancelled by an event",
        extra={"run_id": row.run_id, "workflow": row.workflow_name},
    )
    return NewEvent(
        ev.RUN_CANCELLED,
        {
            "workflowName": row.workflow_name,
            "stepIndex": row.step_index,
            "reason": ev.REASON_CANCELLED_BY_EVENT,
            "eventId": event_id,
        },
    )


def adopted(row: Any, step_index: int, wf: Workflow) -> NewEvent:
    """run-migrated (automatic): the run goes on under a definition that
    changed only after where it stands."""
    log.info(
        "workflow run goes on under a changed definition",
        extra={"run_id": row.run_id, "workflow": row.workflow_name},
    )
    return NewEvent(
        ev.RUN_MIGRATED,
        ev.run_migrated(
            row.workflow_name,
            row.definition_version,
            wf.version,
            step_index,
            step_index,
            wf.fingerprint,
            automatic=True,
        ),
    )


class ClaimWrites:
    """What one claim transaction appends: per run its events at its version,
    and the runs columns set besides (the new lease, progress)."""

    def __init__(self, tenant_id: str) -> None:
        self.tenant_id = tenant_id
        self.batch: list[tuple[StreamId, list[NewEvent], int]] = []
        self.extra: dict[tuple[str, str], dict[str, Any]] = {}
        self.adopted: list[Workflow] = []

    def add(
        self,
        row: Any,
        step_index: int,
        d: Decision,
        retry_attempt: Any = None,
        wf: Workflow | None = None,
    ) -> str | None:
        """Record what decision `d` writes for `row`; the new lease token, if any."""
        new: list[NewEvent] = []
        if d.adopt and wf is not None:  # rule 4: it goes on under the changed definition
            new.append(adopted(row, step_index, wf))
            self.adopted.append(wf)
        if d.claim:  # rule 5: step.resumed at the row's (the stream's) version
            new.append(NewEvent(ev.STEP_RESUMED, ev.step_resumed(step_index, retry_attempt)))
        if d.reason is not None:
            new.append(failure(row, step_index, d.reason, d.error or ""))
        if d.cancelled_by is not None:
            new.append(cancelled_by_event(row, d.cancelled_by))
        if new:
            self.batch.append((runs.stream(self.tenant_id, row.run_id), new, row.version))
        if d.result not in (ResumeResult.RESUMED, ResumeResult.ADVANCED):
            return None
        token = runs.new_token()
        values: dict[str, Any] = dict(
            lease_token=token, lease_until=heartbeat.lease_until(), lease_holder=heartbeat.holder()
        )
        if d.result == ResumeResult.RESUMED:
            values.update(step_index=d.step_index, attempt=d.attempt, results=d.results)
        self.extra[(self.tenant_id, row.run_id)] = values
        return token

    def settle(self, row: Any, stop: Stop) -> None:
        """The run's continuation, run ahead, commits here too: its stop's
        events after the claim's, its columns with the new lease's."""
        stream = runs.stream(self.tenant_id, row.run_id)
        for i, (s, evs, v) in enumerate(self.batch):
            if s == stream:
                self.batch[i] = (s, [*evs, *stop.events], v)
                break
        else:
            self.batch.append((stream, list(stop.events), row.version))
        self.extra[(self.tenant_id, row.run_id)].update(stop.values)

    def write(self, conn: Connection) -> None:
        for wf in self.adopted:
            definitions.record(conn, wf)
        if self.batch:
            runs.append_batch(conn, self.batch, self.extra)
        else:
            runs.set_columns(conn, self.extra)


# --- Slots at the claim ----------------------------------------------------


def admit_resumes(
    conn: Connection,
    tenant_id: str,
    pairs: list[Any],
    decided: list[tuple[Workflow | None, Decision]],
) -> list[tuple[Workflow | None, Decision]]:
    """A run of a `slot="active"` workflow resumes only into a free slot of
    its key (taken here, under the key's lock); without one its row is held
    (`pending.hold`) until a refill of the key releases it."""
    asked = [
        i
        for i, ((_, row), (wf, d)) in enumerate(zip(pairs, decided, strict=True))
        if d.result == ResumeResult.RESUMED
        and wf is not None
        and wf.concurrency is not None
        and wf.concurrency.slot == "active"
        and row.concurrency_key is not None
    ]
    if not asked:
        return decided
    wanted = []
    for i in asked:
        row, wf = pairs[i][1], decided[i][0]
        assert wf is not None and wf.concurrency is not None
        wanted.append(((tenant_id, wf.name, row.concurrency_key), wf.concurrency))
    admitted = slots.admit_many(conn, wanted, behind_queue=False)
    out = list(decided)
    for i, ok in zip(asked, admitted, strict=True):
        if not ok:
            p = pairs[i][0]
            pending.hold(conn, tenant_id, p.run_id, p.step_index)
            out[i] = (out[i][0], Decision(ResumeResult.NO_SLOT))
    return out


# --- The claim -------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    result: ResumeResult
    reason: str | None = None
    state: RunState | None = None  # RESUMED / ADVANCED: what the run goes on with
    settled: str | None = None  # its continuation, run ahead, committed with the claim


@dataclass(frozen=True)
class Ahead:
    """A run's continuation run ahead of its claim or lease (settle ahead, below),
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


def definitions_of(rows: Iterable[Any]) -> dict[str, Workflow | None]:
    """`definition_of` each of these runs rows (None: gone), by run id: looked
    up once per claim, whatever asks for it after."""
    return {
        row.run_id: catalog.get(row.workflow_name, row.definition_version)
        for row in rows
        if row is not None
    }


def old_shapes(
    conn: Connection, rows: list[Any], wfs: Mapping[str, Workflow | None] | None = None
) -> dict[str, Any]:
    """The stored shapes of the runs whose definition changed (read only then);
    `wfs`: their definitions, when already looked up (`definitions_of`)."""
    wfs = definitions_of(rows) if wfs is None else wfs
    changed = set()
    for row in rows:
        wf = wfs.get(row.run_id) if row is not None else None
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
    pairs: list[Any],
    found: dict[str, Any],
    shapes: dict[str, Any],
    kids: dict[str, Any],
    wfs: Mapping[str, Workflow | None],
) -> list[tuple[Workflow | None, Decision]]:
    """Each pair's decision (one claim per run and batch: a second row of a
    run already decided is already-resumed)."""
    out: list[tuple[Workflow | None, Decision]] = []
    seen: set[str] = set()
    for p, row in pairs:
        if row is None or p.run_id in seen:
            out.append((None, Decision(ResumeResult.ALREADY)))
            continue
        wf = wfs.get(row.run_id)
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
    wfs = definitions_of(row for _, row in pairs)
    shapes = old_shapes(conn, [row for _, row in pairs], wfs)
    waited = children_of(pairs, found)  # settled children whose parents wake here
    kids = children.results_of(conn, tenant_id, waited) if waited else {}
    writes = ClaimWrites(tenant_id)
    out: list[Claim] = []
    decided = admit_resumes(conn, tenant_id, pairs, decisions(pairs, found, shapes, kids, wfs))
    for (p, row), (wf, d) in zip(pairs, decided, strict=True):
        if d.result in (ResumeResult.ALREADY, ResumeResult.NO_SLOT):
            out.append(Claim(d.result))
            continue
        if d.result == ResumeResult.STARTED:  # decided under its rate key's lock, now
            due = batches.start_due if batches.is_batched(wf) else rates.start_due
            started = due(conn, row)
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
    pairs = runs.lock_keys(conn, tenant_id, keys)
    now = clock.now()
    early = [p for p, _ in pairs if p.wake_at > now]
    for p in early:
        if tables.timed(p.wake_at):  # not a row waiting for its event or a slot
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
        rows = runs.lock_runs(conn, tenant_id, run_ids, skip_locked=True)
        refs = {ref_of(r.trigger_event_ref) for r in rows.values()} - {""}
        found = found_events(conn, refs, known_events(ahead))
        wfs = definitions_of(rows.values())
        shapes = old_shapes(conn, list(rows.values()), wfs)
        writes = ClaimWrites(tenant_id)
        now = clock.now()
        missed_before = heartbeat.unrenewed_before(now)
        for row in rows.values():
            wf = wfs[row.run_id]
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
    on_resume = host.hooks.on_resume
    db.after_commit(conn, lambda: on_resume(workflow, cause, seconds))


# --- Settle ahead ----------------------------------------------------------


def _current(row: Any, wf: Workflow | None) -> Workflow | None:
    """The run's definition `wf` when it runs ahead: registered, unchanged where
    the run stands (a changed one is the claim's to adopt), and without a
    concurrency limit (the claim's slot admission decides those)."""
    if wf is None or wf.fingerprint != row.fingerprint:
        return None
    return wf if wf.slot_limit is None else None


def ahead_of_leases(tenant_id: str, run_ids: list[str]) -> dict[str, Ahead]:
    """For `take_leases`: the quick continuations of these running runs."""
    with db.reading() as conn:
        rows = runs.lock_runs(conn, tenant_id, run_ids, lock=False)
        wfs = definitions_of(rows.values())
        quick = {
            rid: (row, wf)
            for rid, row in rows.items()
            if (wf := _current(row, wfs[rid])) is not None and run_loop.quick_at(wf, row.step_index)
        }
        refs = {ref_of(row.trigger_event_ref) for row, _ in quick.values()} - {""}
        found = found_events(conn, refs)
    now = clock.now()
    out: dict[str, Ahead] = {}
    for rid, (row, wf) in quick.items():
        trigger = found.get(ref_of(row.trigger_event_ref))
        d = decide_lease(row, wf, trigger, now)
        if d.result != ResumeResult.ADVANCED or d.adopt or trigger is None:
            continue
        stop = run_loop.stretch(RunState.leased(row, "", wf, trigger))
        if stop is not None:
            out[rid] = Ahead(row.version, d, stop, {trigger.id: trigger})
    return out


def ahead_of_claims(tenant_id: str, keys: list[tuple[str, int]]) -> dict[tuple[str, int], Ahead]:
    """For `claim_due`: the quick continuations of the runs these due
    (run, step) rows resume."""
    now = clock.now()
    with db.reading() as conn:
        read = [(p, row) for p, row in runs.read_keys(conn, tenant_id, keys) if row is not None]
        wfs = definitions_of(row for _, row in read)
        pairs = [
            (p, row)
            for p, row in read
            if p.wake_at <= now and _current(row, wfs[row.run_id]) is not None
        ]
        if not pairs:
            return {}
        found = found_events(conn, set().union(*(wanted_events(p, r) for p, r in pairs)))
        waited = children_of(pairs, found)  # settled children whose parents wake here
        kids = children.results_of(conn, tenant_id, waited) if waited else {}
    out: dict[tuple[str, int], Ahead] = {}
    for (p, row), (wf, d) in zip(pairs, decisions(pairs, found, {}, kids, wfs), strict=True):
        if d.result != ResumeResult.RESUMED or wf is None:
            continue
        stop = run_loop.stretch(state_of(tenant_id, row, "", wf, d, found))
        if stop is not None:
            used = {i: found[i] for i in wanted_events(p, row) if i in found}
            out[(p.run_id, p.step_index)] = Ahead(row.version, d, stop, used)
    return out


# --- The continuation ------------------------------------------------------

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
    ahead = ahead_of_claims(tenant_id, keys)
    try:
        with db.transaction() as conn:
            early, due, claimed = claim_due(conn, tenant_id, keys, ahead)
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
    out, states = take_leases(tenant_id, [run_id], dead=dead)
    if not states:
        return out.get(run_id, ResumeResult.LEASED)  # skipped: another holds its row
    return run_loop.execute(tenant_id, run_id, states[0].token, states[0])


def advance_many(
    tenant_id: str, run_ids: list[str], handoff: Handoff | None = None
) -> dict[str, str]:
    """`advance` for a batch of just-started runs, continued together (a slow
    one passed to `handoff` when given)."""
    out, states = take_leases(tenant_id, run_ids, ahead_of_leases(tenant_id, run_ids))
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
