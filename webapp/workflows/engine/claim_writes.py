"""What a claim transaction writes (`ClaimWrites`): per run its events at its
version (step.resumed, and the run-failed, run-cancelled or run-migrated the
resume rules decided) and the runs columns set besides (the new lease,
progress, and a continuation run ahead), in one append."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection

from webapp.eventstore import NewEvent, StreamId
from webapp.workflows.definition.model import Workflow
from webapp.workflows.engine import heartbeat
from webapp.workflows.engine.resume_rules import Decision, ResumeResult
from webapp.workflows.engine.run_state import Stop
from webapp.workflows.store import definitions, runs
from webapp.workflows.store import run_events as ev

log = logging.getLogger("webapp.workflows")


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
