"""Run counters from the run events: an inline projection on the run event
types counts each run started, completed, failed, cancelled, skipped, retried and each
step retry, by workflow name. It counts once the appending transaction has
committed (a rolled-back append counted nothing), whichever process appended:
the worker's claims and the web's operator actions alike.

Every run event carries `workflowName`, so counting reads nothing: a batch of a
hundred runs adds one after-commit callback to its transaction, not a query.
"""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import Counter
from sqlalchemy import Connection

from webapp.core import db
from webapp.eventstore import Event, register_inline
from webapp.metrics import instruments as m
from webapp.workflows.store import run_events as ev

COUNTED: dict[str, Counter] = {
    ev.RUN_STARTED: m.RUNS_STARTED,
    ev.RUN_COMPLETED: m.RUNS_COMPLETED,
    ev.RUN_FAILED: m.RUNS_FAILED,
    ev.RUN_CANCELLED: m.RUNS_CANCELLED,
    ev.RUN_SKIPPED: m.RUNS_SKIPPED,
    ev.RUN_RETRIED: m.RUNS_RETRIED,
    ev.RETRY_SCHEDULED: m.STEP_RETRIES,
}
_SCOPE = "metrics.run_counts"


def _count(conn: Connection, e: Event) -> None:
    scope = db.tx_scope(conn)
    tally: Tally[tuple[str, str]] | None = scope.get(_SCOPE)
    if tally is None:
        new: Tally[tuple[str, str]] = Tally()
        scope[_SCOPE] = tally = new
        db.after_commit(conn, lambda: _add(new))
    tally[(e.type, str(e.payload.get("workflowName") or "unknown"))] += 1


def _add(tally: Tally[tuple[str, str]]) -> None:
    for (event_type, workflow), n in tally.items():
        COUNTED[event_type].labels(workflow).inc(n)


def register() -> None:
    for event_type in COUNTED:
        register_inline(event_type, _count)
