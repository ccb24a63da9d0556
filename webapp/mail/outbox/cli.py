"""`flask mail failed` and `flask mail retry ID|--all`."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from webapp.core import actors
from webapp.mail.outbox import admin

mail_cli = AppGroup("mail", help="Outgoing mail: failed deliveries and retries.")


@mail_cli.command("failed")
def failed() -> None:
    """Mails that were not sent after every attempt (no addresses, no bodies)."""
    rows = admin.failed()
    if not rows:
        click.echo("no failed mails")
        return
    click.echo(f"{'id':>6} {'kind':<24} {'user':<36} {'attempts':>8} {'created':<20} last error")
    for r in rows:
        click.echo(
            f"{r.id:>6} {r.kind:<24} {r.user_id or '-':<36} {r.attempts:>8} "
            f"{r.created_at:%Y-%m-%d %H:%M:%S}  {r.last_error or '-'}"
        )


@mail_cli.command("retry")
@click.argument("outbox_id", type=int, required=False)
@click.option("--all", "retry_all", is_flag=True, help="Retry every failed mail.")
def retry(outbox_id: int | None, retry_all: bool) -> None:
    """Send a failed mail again (with fresh attempts)."""
    if (outbox_id is None) == (not retry_all):
        raise click.UsageError("give one mail id or --all")
    ids = admin.retry(None if retry_all else outbox_id, actor=actors.operator())
    if not ids and retry_all:
        click.echo("no failed mails: nothing to retry")  # nothing wrong: not an error
        return
    if not ids:
        raise click.ClickException(f"mail {outbox_id} is not a failed mail")
    click.echo(f"queued again: {', '.join(str(i) for i in ids)}")
