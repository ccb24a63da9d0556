"""The resume rules, as pure functions of what the claim read: no database,
no clock of their own, no Redis. `decide` answers resume-run's rules 2-7 for
one suspended step; `decide_lease` whether a running run nobody holds (or
whose holder died, `abandoned`) may be leased again. The writers around them (`claims`) lock the rows, look the
events up, and append what the decision says.

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
   the same step, next attempt).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from webapp.eventstore import Event
from webapp.workflows.definition import compat
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus


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


def _ref(ref: Any) -> str:
    return str((ref or {}).get("eventId", ""))


def wanted_events(pending: Any, row: Any) -> set[str]:
    """The event ids rule 6 reads for this pair."""
    ids = {_ref(row.trigger_event_ref)}
    if pending.suspension_event_type in (ev.STEP_WAITING_FOR_EVENT, ev.CHILD_STARTED):
        ids.add(_ref(pending.trigger_event_ref))
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
    if _ref(row.trigger_event_ref) not in found:  # rule 6
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
    results = dict(row.results or {})
    value: Any = None  # a wait, or a wait-for-event's timeout: an empty result
    if pending.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and pending.trigger_event_ref:
        awaited = found.get(_ref(pending.trigger_event_ref))
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
    settled = found.get(_ref(pending.trigger_event_ref))
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
        return Decision(ResumeResult.CANCELLED, cancelled_by=_ref(pending.trigger_event_ref))
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
