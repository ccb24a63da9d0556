"""What a claim hands the run loop (`RunState`), and what the run loop hands
back when a run stops (`Stop`), with the words it answers (`RunResult`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from webapp.eventstore import Event, NewEvent
from webapp.workflows.definition.model import Workflow


@dataclass
class RunState:
    """What the claim (or advance) already knows about a run it leased, so the
    continuation need not read it again."""

    tenant_id: str
    run_id: str
    token: str
    wf: Workflow
    trigger: Event
    step_index: int
    attempt: int
    results: dict[str, Any]
    fingerprint: str

    @classmethod
    def leased(cls, row: Any, token: str, wf: Workflow, trigger: Event) -> RunState:
        """The state of a `workflow_runs` row whose lease `token` we just took."""
        return cls(
            row.tenant_id,
            row.run_id,
            token,
            wf,
            trigger,
            row.step_index,
            row.attempt,
            dict(row.results),
            wf.fingerprint,  # the definition it goes on with (rule 4 checked it)
        )


class RunResult(StrEnum):
    """How far the run loop got with a run."""

    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    LOST = "lost"  # its lease is gone (cancelled, taken over, or an outage outlasted it)


@dataclass
class Stop:
    """How a run stops: the run events to append (a wait that was already due
    on the way adds its step.waiting + step.resumed before the stop) and the
    runs columns their projection does not set (results, step)."""

    run_id: str
    token: str
    status: RunResult  # completed | failed | suspended
    events: list[NewEvent]
    values: dict[str, Any]
    step_index: int = 0
    wake_at: datetime | None = None
