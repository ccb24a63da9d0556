"""How late a resume was: for a step woken by its awaited event, from that
event's append to the claim (`webapp_workflow_event_resume_latency_seconds`);
for one woken by its time (a wait, a retry, a wait-for-event's timeout), from
the time it was due (`webapp_workflow_timer_lateness_seconds`). Called by the
one claim writer (`webapp.workflows.engine.claims`) for each step it resumes,
and observed once the claim has committed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp import clock, db
from webapp.eventstore import Event
from webapp.metrics import instruments
from webapp.workflows.store import run_events as ev


def resumed(conn: Connection, workflow: str, pending: Any, found: dict[str, Event]) -> None:
    """`pending` is the claimed row; `found` the events the claim read by id."""
    now = clock.now()
    awaited = None
    if pending.suspension_event_type == ev.STEP_WAITING_FOR_EVENT and pending.trigger_event_ref:
        awaited = found.get(str(pending.trigger_event_ref.get("eventId", "")))
    if awaited is not None:
        histogram, since = instruments.EVENT_RESUME_LATENCY, awaited.recorded_at
    else:
        histogram, since = instruments.TIMER_LATENESS, pending.wake_at
    seconds = max(0.0, (now - since).total_seconds())
    child = histogram.labels(workflow)
    db.after_commit(conn, lambda: child.observe(seconds))
