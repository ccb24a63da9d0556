"""Operator commands: `flask about`, `flask db`, `flask projections`, `flask tenants`,
`flask jobs`."""

from __future__ import annotations

import json
import platform
from urllib.parse import urlsplit

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext
from sqlalchemy.engine import make_url

from webapp import tenants
from webapp.core import actors, db
from webapp.core.config import Config
from webapp.core.version import VERSION
from webapp.eventstore import parked, projections
from webapp.jobs.registry import registered_jobs
from webapp.publish import PublishError, publish

db_cli = AppGroup("db", help="Database schema (Alembic migrations).")
projections_cli = AppGroup("projections", help="Async projections: status, parked events.")
tenants_cli = AppGroup("tenants", help="Tenants.")
jobs_cli = AppGroup("jobs", help="Scheduled jobs.")
events_cli = AppGroup("events", help="Domain events: publish one (operators, tests).")
# Features add their account commands here (admin: grant/revoke, privacy: lift-restriction).
users_cli = AppGroup("users", help="User accounts: console access, restrictions.")


@db_cli.command("upgrade")
def db_upgrade() -> None:
    """Apply all migrations."""
    from webapp.core.migrate import upgrade

    upgrade(current_app.config["APP_CONFIG"].database_url)
    click.echo("database is up to date")


@projections_cli.command("status")
def projections_status() -> None:
    """Each cursor, its position and its lag."""
    with db.reading() as conn:
        rows = projections.status(conn)
    click.echo(f"{'projection':<50} {'position':>9} {'head':>9} {'lag':>7} {'attempts':>8}")
    for r in rows:
        flag = "" if r["registered"] else "  (not registered)"
        retry = f"  retry at {r['retry_at']:%Y-%m-%d %H:%M:%S}" if r["retry_at"] else ""
        click.echo(
            f"{r['name']:<50} {r['position']:>9} {r['head']:>9} {r['lag']:>7} {r['attempts']:>8}{flag}{retry}"
        )


@projections_cli.command("parked")
def projections_parked() -> None:
    """Events a projection gave up on."""
    with db.reading() as conn:
        rows = parked.list_parked(conn)
    if not rows:
        click.echo("no parked events")
        return
    click.echo(f"{'id':>5} {'projection':<40} {'event':<36} {'attempts':>8} error")
    for r in rows:
        click.echo(f"{r.id:>5} {r.projection:<40} {r.event_id:<36} {r.attempts:>8} {r.error_class}")


@projections_cli.command("retry")
@click.argument("parked_id", type=int)
def projections_retry(parked_id: int) -> None:
    """Apply one parked event again."""
    try:
        ok = parked.retry_parked(parked_id, actor=actors.operator())
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    if not ok:
        raise click.ClickException(f"parked event {parked_id} failed again; it stays parked")
    click.echo(f"parked event {parked_id} applied")


@projections_cli.command("skip")
@click.argument("parked_id", type=int)
def projections_skip(parked_id: int) -> None:
    """Give up on one parked event: it is never applied."""
    try:
        parked.skip_parked(parked_id, actor=actors.operator())
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"parked event {parked_id} skipped")


@projections_cli.command("run")
def projections_run() -> None:
    """Catch every projection up now (normally the worker does this)."""
    r = projections.run_all(current_app.config["APP_CONFIG"].projection_max_attempts)
    click.echo(f"applied {r.applied}, parked {r.parked}")


@tenants_cli.command("create")
@click.argument("name")
def tenants_create(name: str) -> None:
    """Create a tenant."""
    try:
        with db.transaction() as conn:
            tenant_id = tenants.create(conn, name)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created tenant {tenant_id}")


@tenants_cli.command("list")
def tenants_list() -> None:
    with db.reading() as conn:
        for tenant_id in tenants.all_ids(conn):
            click.echo(tenant_id)


@jobs_cli.command("list")
def jobs_list() -> None:
    """Registered jobs and their schedules."""
    for spec in sorted(registered_jobs(), key=lambda s: s.name):
        click.echo(
            f"{spec.name:<30} {spec.cron or '-':<15} per_tenant={spec.per_tenant} concurrency={spec.concurrency}"
        )


@events_cli.command("append")
@click.argument("event_type", metavar="TYPE")
@click.option("--aggregate", required=True, metavar="TYPE/ID", help="the stream, e.g. order/42")
@click.option("--payload", default="{}", metavar="JSON", help="a JSON object (default {})")
@click.option("--tenant", default="default", show_default=True)
def events_append(event_type: str, aggregate: str, payload: str, tenant: str) -> None:
    """Publish one event (webapp.publish.publish): it commits, then is dispatched."""
    agg_type, sep, agg_id = aggregate.partition("/")
    if not sep or not agg_type or not agg_id:
        raise click.BadParameter(
            f"expected TYPE/ID, e.g. order/42; got {aggregate!r}", param_hint="--aggregate"
        )
    try:
        data = json.loads(payload)
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="--payload") from None
    if not isinstance(data, dict):
        raise click.BadParameter("must be a JSON object, e.g. '{\"a\": 1}'", param_hint="--payload")
    try:
        event = publish(event_type, agg_type, agg_id, data, tenant=tenant)
    except PublishError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"appended {event.type} {event.id} to {agg_type}/{agg_id} "
        f"(version {event.version}, position {event.position}, tenant {tenant})"
    )


def _database_in_use(url: str) -> str:
    """The backend and where it is, from the URL's parts: never its user,
    password or query (which may carry a password too)."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        return f"{u.drivername} {u.database or ':memory:'}"
    port = f":{u.port}" if u.port else ""
    return f"{u.drivername} {u.host or 'localhost'}{port}/{u.database or ''}"


def _redis_in_use(url: str, embedded: bool) -> str:
    """The same for Redis: scheme, host, port and database index, or the socket."""
    u = urlsplit(url)
    if u.scheme == "unix":
        where = f"unix://{u.path}"
    else:
        port = f":{u.port}" if u.port else ""
        where = f"{u.scheme}://{u.hostname}{port}{u.path}"
    return f"embedded {where}" if embedded else where


def about_lines(cfg: Config) -> list[str]:
    """What `flask about` prints: read from the configuration alone (no
    connection is made, so it answers at once, also during an outage)."""
    return [
        f"version   {VERSION}",
        f"python    {platform.python_version()} ({platform.python_implementation()})",
        f"database  {_database_in_use(cfg.database_url)}",
        f"redis     {_redis_in_use(cfg.redis_url, cfg.redis_embedded)}",
    ]


@click.command("about")
@with_appcontext
def about() -> None:
    """This release's version, the Python and the database and Redis in use (no secrets)."""
    for line in about_lines(current_app.config["APP_CONFIG"]):
        click.echo(line)


def init_app(app: Flask) -> None:
    app.cli.add_command(about)
    for group in (db_cli, projections_cli, tenants_cli, jobs_cli, events_cli, users_cli):
        app.cli.add_command(group)
