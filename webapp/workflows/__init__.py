"""The workflows feature: durable, event-sourced workflows (see docs/workflows.md)."""

from __future__ import annotations

from flask import Flask

from webapp.security import csrf
from webapp.workflows.registry import register, register_handler, registered, unregister

__all__ = ["init_app", "register", "register_handler", "registered", "unregister"]

_core_registered = False


def init_app(app: Flask) -> None:
    """Register this feature's tables, inline read models, job, webhook route and CLI."""
    global _core_registered
    from webapp.workflows import cli, pending, tables, views  # noqa: F401  (tables: metadata)

    if not _core_registered:
        pending.register()
        from webapp.jobs.registry import JobSpec, register_job
        from webapp.workflows.resume import resume_due_runs

        register_job(JobSpec("resume-due-runs", resume_due_runs, "* * * * *", True, "skip"))
        _core_registered = True
    app.register_blueprint(views.bp)
    csrf.exempt(views.bp)  # webhooks are signed, not session-bound
    app.cli.add_command(cli.workflows_cli)
