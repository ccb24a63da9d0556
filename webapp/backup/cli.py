"""`flask backup create|verify|restore|check` (docs/operations.md, "Backup and restore")."""

from __future__ import annotations

from pathlib import Path

import click
from flask import current_app
from flask.cli import AppGroup

from webapp.backup import create as taking
from webapp.backup import restore as restoring
from webapp.backup.archive import BackupError
from webapp.core.config import Config
from webapp.core.redis_conn import get_redis

backup_cli = AppGroup(
    "backup", help="Backups: take one while the product runs, check one, restore one."
)

PathArg = click.Path(path_type=Path, file_okay=False)


def _cfg() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def _mib(manifest: dict) -> float:
    return round(sum(f["bytes"] for f in manifest["files"].values()) / 2**20, 1)


@backup_cli.command("create")
@click.argument("path", type=PathArg)
@click.option(
    "--replace",
    is_flag=True,
    help="overwrite a backup already at PATH (once the new one is complete)",
)
@click.option("--no-exports", is_flag=True, help="leave the data exports out")
def create(path: Path, replace: bool, no_exports: bool) -> None:
    """Write a consistent copy of the database (and the secret key, the exports)
    to the new folder PATH, while web, worker and scheduler keep running."""
    try:
        m = taking.create(_cfg(), path.resolve(), replace=replace, exports=not no_exports)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    c = m["contents"]
    click.echo(
        f"backup written to {path} in {m['seconds']} s ({_mib(m)} MiB): {c['events']} events "
        f"(head {c['head_position']}), runs {c['runs']}, mails {c['mails']}; integrity: ok"
    )
    key = m["secret_key"]
    if key["where"] == "secret_key":
        click.echo("secret key: included")
    else:
        click.echo(
            f"secret key: NOT included: SECRET_KEY comes from the environment (fingerprint "
            f"{key['fingerprint']}); keep it beside this backup"
        )
    click.echo(f"exports: {m['exports']}")


@backup_cli.command("verify")
@click.argument("path", type=PathArg)
def verify(path: Path) -> None:
    """Check a backup: every file as written, and the database copy whole."""
    try:
        m, problems = taking.verify(path)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    if problems:
        raise click.ClickException(f"{path} is damaged: " + "; ".join(problems[:10]))
    c = m["contents"]
    click.echo(
        f"{path}: ok: {m['backend']} backup of release {m['release']} taken {m['created_at']}, "
        f"{c['events']} events (head {c['head_position']}), {_mib(m)} MiB"
    )


@backup_cli.command("restore")
@click.argument("path", type=PathArg)
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.option(
    "--no-safety-copy",
    is_flag=True,
    help="PostgreSQL: do not dump the database before replacing it",
)
def restore(path: Path, yes: bool, no_safety_copy: bool) -> None:
    """Replace the database by the backup at PATH. Refuses while any web,
    worker or scheduler process runs. The database as it was is kept."""
    cfg = _cfg()
    try:
        m, problems = taking.verify(path)
        if problems:
            raise BackupError(f"{path} is damaged: " + "; ".join(problems[:10]))
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    if not yes:
        click.confirm(
            f"Replace the database by the backup taken {m['created_at']} "
            f"({m['contents']['events']} events)? Everything written after it is set aside",
            abort=True,
        )
    try:
        report = restoring.restore(cfg, path, get_redis(), safety_copy=not no_safety_copy)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    for line in report.lines:
        click.echo(line)
    if report.problems:
        raise click.ClickException(
            f"{len(report.problems)} problem(s) after the restore: see above"
        )
    click.echo("restore complete: start the web, worker and scheduler processes")


@backup_cli.command("check")
def check() -> None:
    """The start-up checks: integrity, schema, projections caught up, waits,
    open runs, the mail outbox. Exits 1 when something is wrong."""
    report = restoring.startup_checks(_cfg())
    for line in report.lines:
        click.echo(line)
    if report.problems:
        raise click.ClickException(f"{len(report.problems)} problem(s): see above")
