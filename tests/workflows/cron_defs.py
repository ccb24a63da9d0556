"""Cron workflows for the cron policy tests: each run waits for `job.done`
with its own tick (so a test settles exactly the run it means), then returns
the tick."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import webapp.workflows as wf
from tests.support.workflows import emit
from webapp.jobs.registry import get_job
from webapp.workflows.triggers import cron

T0 = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)  # a tick of "*/5 * * * *" and "*/10 * * * *"


def waiting(name: str, schedule: str = "*/5 * * * *", **policies: Any) -> wf.Workflow:
    return wf.workflow(
        name,
        cron=schedule,
        awaits={"done": "job.done"},
        steps=[
            wf.wait_for_event(
                "done",
                event="done",
                timeout="P7D",
                match=lambda ctx: wf.match.eq("tick", ctx.trigger.payload["tick"]),
            ),
            wf.ret(lambda ctx: ctx.trigger.payload["tick"]),
        ],
        **policies,
    )


def instant(name: str, schedule: str = "*/10 * * * *", **policies: Any) -> wf.Workflow:
    return wf.workflow(
        name, cron=schedule, steps=[wf.ret(lambda ctx: ctx.trigger.payload["tick"])], **policies
    )


def scheduler_tick(definition: wf.Workflow, at: datetime, tenant: str = "default") -> None:
    """What the scheduler's job does for a tenant at `at`."""
    get_job(cron.cron_job_name(definition)).func(tenant, at)


def finish(tick: datetime) -> None:
    """Settle the run of this tick (its wait_for_event matches the tick)."""
    emit("job.done", {"tick": tick.isoformat()}, f"done-{tick:%H%M}")
