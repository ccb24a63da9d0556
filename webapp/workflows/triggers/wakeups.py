"""Event wake-up: an awaited event wakes the runs waiting for it.

Inline, in the transaction that appends the event (`apply`): the pending
rows of the event's tenant waiting for that type (indexed) have their
persisted match expression evaluated against the payload; a match sets the
trigger columns and wake_at = now (`store.pending.wake`, which signals the
resume after commit), so an awaited event costs one queue hop. A suspension
committed before the event is seen here; one committed after it finds the
event in its look-back, which runs once the suspension has committed
(`engine.suspensions`). The two can pass each other only when the event
commits after that look-back but woke inline before the suspension
committed; the net below catches it.

The rows a `cancel_on` event wakes are woken the same way (their claim
cancels the run). Behind it, as a net, one async projection per workflow
that declares `awaits` or `cancel_on` does the same from a durable cursor
(rows already woken are skipped). It reads an event only once its writer
has ended (the event store's safe position), so every suspension committed
before the event's commit is visible to it.
A row whose expression cannot be evaluated is logged and skipped; it never
blocks the other rows waiting on the same event.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection

from webapp.eventstore import Event, projections, register_inline
from webapp.workflows.definition.model import Workflow
from webapp.workflows.store import pending
from webapp.workflows.store import run_events as ev

log = logging.getLogger("webapp.workflows")


def projection_name(wf: Workflow) -> str:
    return f"workflow-{wf.name}-wakeup"


def apply(conn: Connection, event: Event, workflow_name: str | None = None) -> None:
    """Wake the rows waiting for this event whose match expression it meets:
    of one workflow (its async net) or of every workflow (inline)."""
    pending.wake_matching(conn, event, workflow_name)


_inline_types: set[str] = set()


def mount(wf: Workflow) -> None:
    types = set(wf.awaits.values()) | {c.event_type for c in wf.cancel_on}
    if wf.spawns:  # its runs wait for their children's child-settled
        types.add(ev.CHILD_SETTLED)
    for t in types - _inline_types:
        register_inline(t, apply)  # a no-op for types nobody waits for
        _inline_types.add(t)
    if types:
        # Start from now: rows that exist before mounting are covered by the
        # look-back each wait does when it registers.
        name = wf.name
        projections.register(
            projection_name(wf), types, lambda conn, e: apply(conn, e, name), start="now"
        )


def unmount(wf: Workflow) -> None:
    projections.unregister(projection_name(wf))
