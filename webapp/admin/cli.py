"""`flask users grant-admin EMAIL` and `flask users revoke-admin EMAIL` (on the
app's one `flask users` group, webapp.cli)."""

from __future__ import annotations

import click

from webapp.admin import grants
from webapp.cli import users_cli
from webapp.core import actors
from webapp.tenants import DEFAULT_TENANT


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
