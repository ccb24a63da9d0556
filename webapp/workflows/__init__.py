"""The workflows feature: durable, event-sourced workflows (see docs/workflows.md).

Layers, each importing only those above it in this list (docs/workflows.md,
"Architecture"):

- definition: context, fingerprint, model, durations, api, match, catalog
- interpreter: interpreter/ (one module per step kind)
- persistence: events, tables, readmodel, batch, projection, runs
- scheduling: infra, timers, leases, state, outcomes, suspend, runner, claims,
  drain, resume, sweep, timer, resumer
- triggers: trigger, wakeup, erasure, registry
- entry points: ops, cli, views, this package's init_app, worker/workflow_tasks
"""

from __future__ import annotations

from flask import Flask

from webapp.jobs.registry import JobSpec, register_job
from webapp.security import csrf
from webapp.workflows import cli, erasure, projection, tables, views  # noqa: F401  (tables: metadata)
from webapp.workflows.registry import register, register_handler, registered, unregister
from webapp.workflows.sweep import resume_due_runs

__all__ = ["init_app", "register", "register_handler", "registered", "unregister"]

_core_registered = False


def init_app(app: Flask) -> None:
    """Register this feature's tables, inline read models, job, webhook route and CLI."""
    global _core_registered
    if not _core_registered:
        projection.register()
        erasure.register()
        register_job(JobSpec("resume-due-runs", resume_due_runs, "* * * * *", True, "skip"))
        _core_registered = True
    app.register_blueprint(views.bp)
    csrf.exempt(views.bp)  # webhooks are signed, not session-bound
    app.cli.add_command(cli.workflows_cli)
