"""`flask api-tokens create|list|revoke` and `flask api openapi`."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import AppGroup

from webapp.api import openapi, tokens
from webapp.core import actors, db
from webapp.tenants import DEFAULT_TENANT

tokens_cli = AppGroup("api-tokens", help="API tokens: create (shown once), list, revoke.")
api_cli = AppGroup("api", help="The HTTP API: its OpenAPI document.")


def _when(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else "never"


@tokens_cli.command("create")
@click.option("--name", required=True, help="who uses it, e.g. storefront")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    required=True,
    type=click.Choice(list(tokens.SCOPES)),
    help="repeat for several",
)
@click.option("--tenant", default=DEFAULT_TENANT, show_default=True)
def create(name: str, scopes: tuple[str, ...], tenant: str) -> None:
    """Create a token; its secret is printed once and never again."""
    try:
        with db.transaction() as conn:
            token, secret = tokens.create(conn, name, scopes, tenant, actors.operator())
    except tokens.TokenError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created API token {token.id} ({token.name}, tenant {token.tenant_id})")
    click.echo(f"scopes: {' '.join(sorted(token.scopes))}")
    click.echo("the token (shown once, keep it secret):")
    click.echo(secret)


@tokens_cli.command("list")
def list_tokens() -> None:
    """Every token: tenant, scopes, last use, revoked or not (never a secret)."""
    with db.reading() as conn:
        rows = tokens.all_tokens(conn)
    if not rows:
        click.echo("no API tokens")
        return
    click.echo(
        f"{'id':<36}  {'name':<20} {'tenant':<12} {'starts':<8}  {'last used':<19}  "
        f"{'state':<7}  scopes"
    )
    for t in rows:
        state = "revoked" if t.revoked else "active"
        click.echo(
            f"{t.id:<36}  {t.name[:20]:<20} {t.tenant_id[:12]:<12} {t.hint:<8}  "
            f"{_when(t.last_used_at):<19}  {state:<7}  {' '.join(sorted(t.scopes))}"
        )


@tokens_cli.command("revoke")
@click.argument("token_id")
def revoke(token_id: str) -> None:
    """Revoke a token: refused from its next request on, by every process."""
    try:
        with db.transaction() as conn:
            tokens.revoke(conn, token_id, actors.operator())
    except tokens.TokenError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"revoked API token {token_id}")


@api_cli.command("openapi")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="write it here")
def openapi_cmd(output: Path | None) -> None:
    """Print the OpenAPI 3.1 document of /api/v1 (or write it to a file)."""
    text = openapi.document_text()
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text)
        click.echo(f"wrote {output}")
