"""A new run's controls, fixed when it is created: its deadline (`timeout=`)
and the cancel-on events with their match expressions evaluated against the
run context, as the run-started (or run-queued) payload records them. The
projection keeps them in the pending set (`store.projection`), the claim
acts on them (`engine.resume.decide_control`)."""

from __future__ import annotations

from typing import Any

from webapp.core import clock
from webapp.eventstore import Event
from webapp.workflows.definition import match as matchmod
from webapp.workflows.definition.controls import ControlError
from webapp.workflows.definition.model import RunContext, Workflow
from webapp.workflows.interpreter import resolve
from webapp.workflows.store import run_events as ev


def with_controls(
    wf: Workflow, tenant_id: str, run_id: str, trigger: Event, payload: dict[str, Any]
) -> dict[str, Any]:
    """`payload` with the run's deadline and cancel-on events, if it has any.
    ControlError: a match function raised or gave no expression."""
    if wf.timeout is None and not wf.cancel_on:
        return payload
    ctx = RunContext(tenant_id, run_id, wf.name, trigger)
    deadline = (clock.now() + wf.timeout).isoformat() if wf.timeout is not None else None
    entries = []
    for c in wf.cancel_on:
        try:
            node = resolve(c.match, ctx)
            expr = matchmod.persist(node) if node is not None else None
        except Exception as exc:
            raise ControlError(
                f"cancel_on {c.event_type!r}: the match function failed ({type(exc).__name__})"
            ) from exc
        entries.append({"eventType": c.event_type, "match": expr})
    return ev.with_controls(payload, deadline, entries, int(trigger.position))
