"""The mail outbox: every mail is recorded in the transaction of the change
that causes it and delivered by the worker with backoff until sent or
visibly failed (see docs/accounts.md, "Account mail")."""

from __future__ import annotations

from flask import Flask

from webapp.mail.outbox import cli, jobs, tables
from webapp.mail.outbox.store import Mail, erase_user, recent, record

__all__ = ["Mail", "erase_user", "init_app", "recent", "record"]

del jobs, tables  # imported for their registrations (the sweep job, the table)


def init_app(app: Flask) -> None:
    app.cli.add_command(cli.mail_cli)
