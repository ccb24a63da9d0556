"""Operator commands: `flask exports list|show` and `flask users lift-restriction`.
Nothing they print is personal data beyond ids (no addresses, no tokens)."""

from __future__ import annotations

import click
from flask import Flask
from flask.cli import AppGroup

from webapp.accounts import restriction
from webapp.cli import users_cli
from webapp.core import actors, db
from webapp.privacy import downloads, exports

exports_cli = AppGroup("exports", help="Data exports of the privacy center.")


def _when(value: object) -> str:
    return f"{value:%Y-%m-%d %H:%M:%S}" if value else "-"


@exports_cli.command("list")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
def exports_list(limit: int) -> None:
    """The newest export jobs."""
    with db.reading() as conn:
        jobs = exports.listing(conn, limit)
    if not jobs:
        click.echo("no exports")
        return
    click.echo(f"{'job':<36}  {'user':<36}  {'status':<8}  {'requested':<19}  file")
    for j in jobs:
        click.echo(
            f"{j.id:<36}  {j.user_id:<36}  {j.status:<8}  {_when(j.requested_at):<19}  "
            f"{'kept' if j.file_name else '-'}"
        )


@exports_cli.command("show")
@click.argument("job_id")
def exports_show(job_id: str) -> None:
    """One job, its timeline and every download attempt."""
    with db.reading() as conn:
        job = exports.get(conn, job_id)
        if job is None:
            raise click.ClickException(f"no export job {job_id!r}")
        tried = downloads.attempts(conn, job.id)
    click.echo(f"job {job.id}  user {job.user_id}  status {job.status}")
    click.echo(f"  requested {_when(job.requested_at)}  started {_when(job.started_at)}")
    click.echo(f"  completed {_when(job.completed_at)}  expires {_when(job.expires_at)}")
    click.echo(f"  bytes {job.bytes_written or '-'}  file {job.file_name or '-'}")
    if job.error:
        click.echo(f"  error {job.error}")
    click.echo(f"  downloads and attempts: {len(tried)}")
    for a in tried:
        click.echo(
            f"    {_when(a['attempted_at'])}  {a['via']:<5}  {a['result']:<11}  "
            f"{a['ip'] or '-'}  {a['user_agent'] or '-'}"
        )


@users_cli.command("lift-restriction")
@click.argument("email")
@click.option("--operator", default=None, help="who lifts it (default: the login name)")
def users_lift_restriction(email: str, operator: str | None) -> None:
    """Lift a restriction of processing; the user may sign in again."""
    who = f"cli:{operator}" if operator else actors.operator()
    outcome = restriction.lift(email, who)
    if not outcome.ok:
        raise click.ClickException(outcome.key)
    click.echo(f"restriction lifted for user {outcome.user_id} (by {who})")


def init_app(app: Flask) -> None:
    app.cli.add_command(exports_cli)  # lift-restriction is on webapp.cli's `flask users`
