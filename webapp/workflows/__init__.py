"""Durable, event-sourced workflows: the one import for workflow authors
(docs/workflows.md).

    import webapp.workflows as wf

    reminder = wf.workflow(
        "verification-reminder",
        on="user.registered",
        steps=[wf.wait("pause", "P1D"), wf.send_mail("remind", to=..., subject=..., body=...)],
    )
    wf.register(reminder)

The engine underneath, in layers; each imports only the layers above it in
this list (import-linter contracts in pyproject.toml keep it so):

- `definition/`: what a workflow is: steps, builders, run context, match,
  durations, fingerprint, catalog. Pure: no database, Redis or Flask.
- `interpreter/`: runs one step, one module per step kind.
- `store/`: run events, the runs and pending tables, their projection, leases,
  look-back: all SQL on the run tables.
- `engine/`: run state, the run loop, stops and suspensions, the resume rules,
  claims, the transient-error policy. No Redis, no job queue.
- `dispatch/`: the resume loop, the timer loop, drains, sweeps and the
  after-commit signal to Redis.
- `triggers/`: event, webhook and cron starts, wake-ups, subject erasure,
  registration.
- this package: the facade below, `cli`, `operations` (operator actions) and
  `webhook_route`; above them all `testing` (the test harness for workflow
  authors) and its `pytest_plugin`. The RQ job functions are declared in `worker/`.
"""

from __future__ import annotations

from flask import Flask

from webapp.core.security import csrf
from webapp.jobs.registry import JobSpec, register_job
from webapp.workflows import cli, webhook_route
from webapp.workflows.client import (
    RunHead,
    StreamItem,
    run_head,
    signal,
    state,
    stream_after,
    stream_versions,
    update,
    update_with_start,
)
from webapp.workflows.definition import match
from webapp.workflows.definition.builders import (
    DefinitionError,
    Workflow,
    append_event,
    branch,
    call,
    collect,
    compute,
    for_each,
    limit,
    on,
    one,
    parse_duration,
    quiet,
    rate,
    ret,
    retry,
    run_workflow,
    send_mail,
    send_webhook,
    wait,
    wait_for_event,
    workflow,
)
from webapp.workflows.definition.messages import (
    Rejected,
    set_state,
    wait_for_signal,
    wait_for_update,
)
from webapp.workflows.definition.model import RunContext
from webapp.workflows.dispatch import pg_wake, signals, sweep
from webapp.workflows.store import cron_ticks, messages, progress, projection
from webapp.workflows.store.messages import (
    MessageError,
    RunNotFound,
    RunNotOpen,
    UpdateResult,
)
from webapp.workflows.store.progress import ProgressLimitExceeded
from webapp.workflows.triggers import registry, subject_erasure
from webapp.workflows.triggers.registry import register, register_handler, registered, unregister

__all__ = [
    "DefinitionError",
    "MessageError",
    "ProgressLimitExceeded",
    "Rejected",
    "StreamItem",
    "RunNotFound",
    "RunNotOpen",
    "UpdateResult",
    "RunContext",
    "RunHead",
    "Workflow",
    "append_event",
    "branch",
    "call",
    "collect",
    "compute",
    "for_each",
    "init_app",
    "limit",
    "match",
    "on",
    "one",
    "parse_duration",
    "quiet",
    "rate",
    "register",
    "register_handler",
    "registered",
    "registry",
    "ret",
    "retry",
    "run_head",
    "run_workflow",
    "send_mail",
    "send_webhook",
    "set_state",
    "signal",
    "state",
    "stream_after",
    "stream_versions",
    "unregister",
    "update",
    "update_with_start",
    "wait",
    "wait_for_event",
    "wait_for_signal",
    "wait_for_update",
    "workflow",
]

_core_registered = False


def init_app(app: Flask) -> None:
    """Register this feature's inline read models, sweep job, webhook route and CLI."""
    global _core_registered
    if not _core_registered:
        projection.register()
        messages.register()
        progress.register()
        cron_ticks.register()
        signals.install()
        pg_wake.install()
        subject_erasure.register()
        register_job(JobSpec("resume-due-runs", sweep.resume_due_runs, "* * * * *", True, "skip"))
        _core_registered = True
    cfg = app.config["APP_CONFIG"]
    progress.configure(cfg.workflow_progress_max_entries, cfg.workflow_progress_max_bytes)
    pg_wake.configure(cfg.listen_url)
    app.register_blueprint(webhook_route.bp)
    csrf.exempt(webhook_route.bp)  # webhooks are signed, not session-bound
    app.cli.add_command(cli.workflows_cli)
