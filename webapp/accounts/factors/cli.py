"""`flask users reset-factors EMAIL` (on the app's one `flask users` group)."""

from __future__ import annotations

import click

from webapp.accounts.factors import reset
from webapp.cli import users_cli
from webapp.core import actors
from webapp.tenants import DEFAULT_TENANT


@users_cli.command("reset-factors")
@click.argument("email")
@click.option("--tenant", default=DEFAULT_TENANT, show_default=True)
def reset_factors(email: str, tenant: str) -> None:
    """Remove every second factor and recovery code of an account (it lost them all)."""
    try:
        done = reset.reset_factors(email, actors.operator(), tenant)
    except reset.ResetError as exc:
        raise click.ClickException(str(exc)) from None
    if done:
        click.echo(f"{email}: second factors removed; the account holder was mailed")
    else:
        click.echo(f"{email} has no second factor; nothing changed")
