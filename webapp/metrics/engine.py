"""The workflow engine's metrics, observed through its host hooks
(`webapp.workflows.host`): the engine reports, these record.

- `webapp_workflow_step_duration_seconds{kind}`: each step run;
- `webapp_workflow_event_resume_latency_seconds{workflow}`: for a step woken
  by its awaited event, from that event's append to the claim's commit;
- `webapp_workflow_timer_lateness_seconds{workflow}`: for a step woken by its
  time (a wait, a retry, a wait-for-event's timeout), from when it was due.

A histogram's child is made at its first observation, so a process that runs
no step (a `flask` command) writes no metrics file."""

from __future__ import annotations

from webapp.metrics import instruments


def on_step(kind: str, seconds: float) -> None:
    instruments.STEP_DURATION.labels(kind).observe(seconds)


def on_resume(workflow: str, cause: str, seconds: float) -> None:
    histogram = instruments.EVENT_RESUME_LATENCY if cause == "event" else instruments.TIMER_LATENESS
    histogram.labels(workflow).observe(seconds)
