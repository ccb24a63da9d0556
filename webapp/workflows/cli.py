"""`flask workflows runs|show|cancel|retry|stuck`."""

from __future__ import annotations

import json

import click
from flask.cli import AppGroup

from webapp import actors, db
from webapp.workflows import operations as ops
from webapp.workflows.store.run_events import RunStatus

workflows_cli = AppGroup("workflows", help="Workflow runs: list, inspect, cancel, retry.")


def _ts(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else "-"


@workflows_cli.command("runs")
@click.option("--status", type=click.Choice([s.value for s in RunStatus]))
@click.option("--workflow", "workflow_name")
@click.option("--limit", default=200, show_default=True)
def runs(status: str | None, workflow_name: str | None, limit: int) -> None:
    """Runs, newest first."""
    with db.reading() as conn:
        rows = ops.list_runs(conn, status, workflow_name, limit)
    if not rows:
        click.echo("no runs")
        return
    click.echo(
        f"{'run id':<36}  {'workflow':<30} {'status':<10} {'step':>4}  {'started':<19}  tenant"
    )
    for r in rows:
        click.echo(
            f"{r.run_id:<36}  {r.workflow_name:<30} {r.status:<10} {r.step_index:>4}  "
            f"{_ts(r.started_at):<19}  {r.tenant_id}"
        )


@workflows_cli.command("show")
@click.argument("run_id")
def show(run_id: str) -> None:
    """A run's event timeline."""
    with db.reading() as conn:
        try:
            run = ops.find_run(conn, run_id)
            events = ops.timeline(conn, run_id)
            pending = ops.pending_rows(conn, run_id)
        except ops.OperationError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(
        f"run {run.run_id}  workflow {run.workflow_name}  status {run.status}  tenant {run.tenant_id}"
    )
    for e in events:
        click.echo(
            f"  v{e.version:<3} {_ts(e.recorded_at)}  {e.type:<34} {json.dumps(e.payload, sort_keys=True)}"
        )
    for p in pending:
        click.echo(
            f"  pending step {p.step_index}: wakes at {_ts(p.wake_at)} ({p.suspension_event_type})"
        )


@workflows_cli.command("cancel")
@click.argument("run_id")
def cancel(run_id: str) -> None:
    """Cancel a run: it never resumes."""
    try:
        ops.cancel(run_id, actor=actors.operator())
    except ops.OperationError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"run {run_id} cancelled")


@workflows_cli.command("retry")
@click.argument("run_id")
def retry(run_id: str) -> None:
    """Continue a failed run from its failed step as a new attempt."""
    try:
        ops.retry(run_id, actor=actors.operator())
    except ops.OperationError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"run {run_id} retried")


@workflows_cli.command("stuck")
def stuck() -> None:
    """Runs due for more than 5 minutes and not advanced."""
    with db.reading() as conn:
        rows = ops.stuck(conn)
    if not rows:
        click.echo("no stuck runs")
        return
    for r in rows:
        click.echo(
            f"{r['run_id']}  {r['workflow']:<30} step {r['step_index']:>3}  {r['state']:<9} "
            f"due since {_ts(r['due_since'])}  tenant {r['tenant_id']}"
        )


@workflows_cli.command("resume")
@click.argument("run_id")
@click.argument("step_index")
@click.option("--tenant", default="default", show_default=True)
def resume_cmd(run_id: str, step_index: str, tenant: str) -> None:
    """Run resume-run for a suspended step now (same rules as the job)."""
    try:
        index = int(step_index)
    except ValueError:
        raise click.ClickException(
            f"resume-run: stepIndex must be an integer >= 0, got {step_index!r}"
        ) from None
    try:
        outcome = ops.resume(tenant, run_id, index)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"run {run_id} step {index}: {outcome}")
