"""`flask users grant-admin EMAIL` and `flask users revoke-admin EMAIL`."""

from __future__ import annotations

import click
from flask import Flask
from flask.cli import AppGroup

from webapp import actors
from webapp.admin import grants
from webapp.tenants import DEFAULT_TENANT

users_cli = AppGroup("users", help="Accounts: who may enter the operations console.")


def _set(email: str, admin: bool, tenant: str) -> None:
    try:
        changed = grants.set_admin(email, admin, actors.operator(), tenant)
    except grants.GrantError as exc:
        raise click.ClickException(str(exc)) from None
    state = "an admin" if admin else "not an admin"
    click.echo(f"{email} is {'now' if changed else 'already'} {state}")


@users_cli.command("grant-admin")
@click.argument("email")
@click.option("--tenant", default=DEFAULT_TENANT, show_default=True)
def grant_admin(email: str, tenant: str) -> None:
    """Let an account enter the operations console (/admin)."""
    _set(email, True, tenant)


@users_cli.command("revoke-admin")
@click.argument("email")
@click.option("--tenant", default=DEFAULT_TENANT, show_default=True)
def revoke_admin(email: str, tenant: str) -> None:
    """Take the operations console away from an account."""
    _set(email, False, tenant)


def init_app(app: Flask) -> None:
    # Another feature may own a `users` group too: join it instead of replacing it.
    existing = app.cli.commands.get("users")  # type: ignore[attr-defined]
    if isinstance(existing, click.Group) and existing is not users_cli:
        for command in users_cli.commands.values():
            existing.add_command(command)
    else:
        app.cli.add_command(users_cli)
