"""Personal data in runs: a run's `results` may hold what its steps computed
about the person it runs for (its subject: the trigger event's aggregate id).
When that person is erased (`user.erased`, appended by account erasure), every
run of theirs loses its results and its open runs are cancelled, in the same
transaction as the erasure itself (an inline projection)."""

from __future__ import annotations

from sqlalchemy import Connection

from webapp.eventstore import Event, register_inline
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs

ERASURE_EVENTS = ("user.erased",)
REASON_SUBJECT_ERASED = "subject_erased"


def erase_subject(conn: Connection, tenant_id: str, subject_id: str) -> int:
    """Erase the results of every run of `subject_id`; cancel the open ones.
    Returns the number of runs touched."""
    for row in runs.open_runs_of(conn, tenant_id, subject_id):
        runs.append_run_event(
            conn,
            row,
            ev.RUN_CANCELLED,
            {
                "workflowName": row.workflow_name,
                "stepIndex": row.step_index,
                "reason": REASON_SUBJECT_ERASED,
            },
        )
    return runs.forget_results(conn, tenant_id, subject_id)


def _on_erased(conn: Connection, e: Event) -> None:
    erase_subject(conn, e.tenant_id, e.aggregate_id)


def register() -> None:
    for t in ERASURE_EVENTS:
        register_inline(t, _on_erased)
