"""Personal data in runs: a run's `results` may hold what its steps computed
about the person it runs for (its subject: the trigger event's aggregate id).
When that person is erased (`user.erased`, appended by account erasure), every
run of theirs loses its results and its open runs are cancelled, in the same
transaction as the erasure itself (an inline projection)."""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from webapp.eventstore import Event, register_inline
from webapp.workflows.store import run_events as ev
from webapp.workflows.store import runs
from webapp.workflows.store.tables import workflow_runs

ERASURE_EVENTS = ("user.erased",)
REASON_SUBJECT_ERASED = "subject_erased"


def erase_subject(conn: Connection, tenant_id: str, subject_id: str) -> int:
    """Erase the results of every run of `subject_id`; cancel the open ones.
    Returns the number of runs touched."""
    q = select(workflow_runs).where(
        workflow_runs.c.tenant_id == tenant_id,
        workflow_runs.c.subject_id == subject_id,
        workflow_runs.c.status.in_(("running", "suspended")),
    )
    for row in conn.execute(q.with_for_update() if conn.dialect.name != "sqlite" else q).all():
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
    return int(
        conn.execute(
            update(workflow_runs)
            .where(
                workflow_runs.c.tenant_id == tenant_id,
                workflow_runs.c.subject_id == subject_id,
            )
            .values(results={}, error=None)
        ).rowcount
    )


def _on_erased(conn: Connection, e: Event) -> None:
    erase_subject(conn, e.tenant_id, e.aggregate_id)


def register() -> None:
    for t in ERASURE_EVENTS:
        register_inline(t, _on_erased)
