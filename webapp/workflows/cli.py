"""`flask workflows runs|show|cancel|retry|stuck|resume|pause|pause-workflow|
resume-workflow|versions|check|migrate|backfill|signal|update`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from flask.cli import AppGroup

from webapp.core import actors, db
from webapp.workflows import bulk, client, pausing, rerun
from webapp.workflows import operations as ops
from webapp.workflows import versions as vers
from webapp.workflows.store import messages
from webapp.workflows.store.run_events import RunStatus
from webapp.workflows.triggers import cron

workflows_cli = AppGroup("workflows", help="Workflow runs: list, inspect, cancel, retry.")


@contextmanager
def _refused(*errors: type[Exception]) -> Iterator[None]:
    """An expected failure (its text names what is wrong): click's error, exit 1."""
    try:
        yield
    except errors as exc:
        raise click.ClickException(str(exc)) from None


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
@click.option("--json", "as_json", is_flag=True, help="The same, as JSON.")
def show(run_id: str, as_json: bool) -> None:
    """A run: status, version, results, what it waits for, its queue place, its events."""
    with db.reading() as conn:
        with _refused(ops.OperationError):
            info = ops.describe_run(conn, run_id)
    if as_json:
        click.echo(json.dumps(info, indent=2, sort_keys=True, default=str))
        return
    click.echo(
        f"run {info['runId']}  workflow {info['workflow']} v{info['version']}  "
        f"status {info['status']}  tenant {info['tenant']}"
    )
    click.echo(f"  step {info['stepIndex']}  attempt {info['attempt']}")
    if info["error"]:
        click.echo(f"  error: {info['error']} ({info['reason'] or 'step error'})")
    if info["queue"]:
        q = info["queue"]
        if q["startAt"] is not None:  # throttled or debounced
            click.echo(f"  queued: rate key {q['rateKey']!r}, starts at {q['startAt']}")
        else:
            click.echo(
                f"  queued: key {q['key']!r}, position {q['position']}, priority {q['priority']}"
            )
    if info["batch"]:
        b = info["batch"]
        click.echo(f"  batch: key {b['key']!r}, {b['count']} events")
        for e in b["events"]:
            click.echo(f"    #{e['position']}  {e['type']}  {e['aggregateId']}  {e['eventId']}")
    if info["singleton"]:
        s = info["singleton"]
        click.echo(f"  singleton: key {s['key']!r}")
        for replaced in s["replaces"]:
            click.echo(f"  replaced: run {replaced}")
        if s["replacedBy"]:
            click.echo(f"  replaced by: run {s['replacedBy']}")
        if s["skippedFor"]:
            click.echo(f"  skipped: run {s['skippedFor']} of the key was open")
    for p in info["pending"]:
        if p["kind"] == "deadline":
            click.echo(f"  deadline: {p['wakeAt']}")
        elif p["kind"] == "cancel-on":
            click.echo(f"  cancelled by: event {p['awaits']}")
        else:
            what = f"event {p['awaits']}" if p["awaits"] else p["kind"]
            click.echo(f"  waits: step {p['stepIndex']} for {what}, until {p['wakeAt']}")
    if info["parent"]:
        click.echo(f"  parent: {info['parent']}")
    for c in info["children"]:
        click.echo(f"  child: {c['runId']}  {c['workflow']}  {c['status']}")
    if info["state"]:
        click.echo(f"  state: {json.dumps(info['state'], sort_keys=True, default=str)}")
    for m in info["messages"]:
        click.echo(f"  {m['kind']}: {m['name']}  {m['status']}  sent {m['sentAt'][:19]}")
    click.echo(f"  results: {json.dumps(info['results'], sort_keys=True, default=str)}")
    for e in info["events"]:
        click.echo(
            f"  v{e['version']:<3} {e['recordedAt'][:19]}  {e['type']:<34} "
            f"{json.dumps(e['payload'], sort_keys=True)}"
        )


def _one_or_bulk(action: str, run_id: str | None, filter_text: str | None, yes: bool) -> bool:
    """Run the bulk form when --filter is given; False: the one-run form."""
    if filter_text is None:
        if run_id is None:
            raise click.UsageError("give a RUN_ID or --filter key=value,...")
        return False
    if run_id is not None:
        raise click.UsageError("give a RUN_ID or --filter, not both")
    with _refused(ValueError):
        f = bulk.parse_filter(filter_text)
    with db.reading() as conn:
        ids = bulk.in_order(action, bulk.matching_rows(conn, f))
    if not yes:
        click.echo(f"{len(ids)} runs match. Nothing was changed: add --yes to {action} them.")
        return True
    done, errors = bulk.apply(action, ids, actors.operator())
    click.echo(f"{action}: {done} of {len(ids)} runs done")
    for rid, why in list(errors.items())[:20]:
        click.echo(f"  {rid}: {why}")
    if len(errors) > 20:
        click.echo(f"  ... and {len(errors) - 20} more refused")
    return True


def _act(
    action: str,
    one: Callable[..., object],
    run_id: str | None,
    filter_text: str | None,
    yes: bool,
    done: str,
) -> None:
    """One run (`one(run_id, actor=...)`), or in bulk with --filter."""
    if _one_or_bulk(action, run_id, filter_text, yes):
        return
    assert run_id is not None
    with _refused(ops.OperationError):
        one(run_id, actor=actors.operator())
    click.echo(f"run {run_id} {done}")


_FILTER = click.option(
    "--filter",
    "filter_text",
    help="status=...,workflow=...,tenant=...,started-before=...,started-after=... (ISO 8601).",
)
_YES = click.option("--yes", is_flag=True, help="With --filter: do it (else only count).")


@workflows_cli.command("cancel")
@click.argument("run_id", required=False)
@_FILTER
@_YES
def cancel(run_id: str | None, filter_text: str | None, yes: bool) -> None:
    """Cancel a run (it never resumes), or every run a --filter matches."""
    _act("cancel", ops.cancel, run_id, filter_text, yes, "cancelled")


@workflows_cli.command("retry")
@click.argument("run_id", required=False)
@_FILTER
@_YES
def retry(run_id: str | None, filter_text: str | None, yes: bool) -> None:
    """Continue a failed run from its failed step as a new attempt (or --filter)."""
    _act("retry", ops.retry, run_id, filter_text, yes, "retried")


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
@click.argument("step_index", required=False)
@click.option("--tenant", default="default", show_default=True)
def resume_cmd(run_id: str, step_index: str | None, tenant: str) -> None:
    """Resume a paused run; with STEP_INDEX, run resume-run for that suspended
    step now (same rules as the job)."""
    if step_index is None:
        with _refused(ops.OperationError):
            pausing.unpause(run_id, actor=actors.operator())
        click.echo(f"run {run_id} resumed")
        return
    try:
        index = int(step_index)
    except ValueError:
        raise click.ClickException(
            f"resume-run: stepIndex must be an integer >= 0, got {step_index!r}"
        ) from None
    with _refused(ValueError):
        outcome = ops.resume(tenant, run_id, index)
    click.echo(f"run {run_id} step {index}: {outcome}")


@workflows_cli.command("rerun")
@click.argument("run_id")
@click.option("--from-step", "from_step", required=True, help="The index of the first step to run.")
def rerun_cmd(run_id: str, from_step: str) -> None:
    """Start a new run with the same trigger and the results of the steps before N."""
    with _refused(ops.OperationError):
        new_id = rerun.rerun(run_id, from_step, actor=actors.operator())
    click.echo(f"run {new_id} started: a rerun of {run_id} from step {from_step}")


@workflows_cli.command("pause")
@click.argument("run_id", required=False)
@_FILTER
@_YES
def pause_cmd(run_id: str | None, filter_text: str | None, yes: bool) -> None:
    """Pause a run (it takes no step until `resume RUN_ID`), or every run a --filter matches."""
    _act("pause", pausing.pause, run_id, filter_text, yes, "paused")


@workflows_cli.command("pause-workflow")
@click.argument("name")
def pause_workflow_cmd(name: str) -> None:
    """Pause a workflow: its open runs pause, new triggers start as Queued."""
    with _refused(ops.OperationError):
        n = pausing.pause_workflow(name, actor=actors.operator())
    click.echo(f"workflow {name} paused ({n} open runs paused)")


@workflows_cli.command("resume-workflow")
@click.argument("name")
def resume_workflow_cmd(name: str) -> None:
    """Resume a paused workflow: the runs its pause held go on."""
    with _refused(ops.OperationError):
        n = pausing.resume_workflow(name, actor=actors.operator())
    click.echo(f"workflow {name} resumed ({n} runs resumed)")


@workflows_cli.command("versions")
def versions_cmd() -> None:
    """Each workflow's versions: in the code or not, which one starts, open runs."""
    with db.reading() as conn:
        rows = vers.versions(conn)
    if not rows:
        click.echo("no workflows")
        return
    click.echo(f"{'workflow':<30} {'version':>7}  {'in code':<8} {'starts':<7} open runs")
    for v in rows:
        in_code = "yes" if v.in_code else "no"
        starts = "yes" if v.starts else ("finish" if v.in_code else "-")
        click.echo(f"{v.workflow:<30} {v.version:>7}  {in_code:<8} {starts:<7} {v.open_runs}")


@workflows_cli.command("check")
@click.option("--json", "as_json", is_flag=True, help="The same report, as JSON.")
def check_cmd(as_json: bool) -> None:
    """Compare the code's definitions with the open runs; exit 1 if any would fail."""
    with db.reading() as conn:
        report = vers.check(conn)
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2, sort_keys=True))
    else:
        for line in vers.describe(report):
            click.echo(line)
    if not report.ok:
        raise SystemExit(1)


@workflows_cli.command("migrate")
@click.argument("name")
@click.option("--from", "from_version", type=click.IntRange(min=1), required=True)
@click.option("--to", "to_version", type=click.IntRange(min=1), required=True)
@click.option("--map", "pairs", multiple=True, metavar="OLD=NEW", help="Step renames.")
@click.option("--dry-run", is_flag=True, help="Say what would move; change nothing.")
def migrate_cmd(
    name: str, from_version: int, to_version: int, pairs: tuple[str, ...], dry_run: bool
) -> None:
    """Move open runs waiting at a step from one version to another."""
    with _refused(ValueError, vers.MigrationError):
        mapping = vers.parse_map(list(pairs))
        with db.transaction() as conn:
            plan = vers.migrate(
                conn, name, from_version, to_version, mapping, dry_run, actor=actors.operator()
            )
    verb = "would move" if dry_run else "moved"
    click.echo(f"{verb} {len(plan.moves)} runs of {name} from v{from_version} to v{to_version}")
    for m in plan.moves:
        click.echo(f"  {m.run_id}: step {m.step!r} index {m.from_step} -> {m.to_step}")
    if plan.skipped:
        click.echo(
            f"{len(plan.skipped)} running runs not at a step boundary were left: run it again"
        )


@workflows_cli.command("backfill")
@click.argument("name")
@click.option("--from", "start", required=True, help="First tick (ISO 8601, with a zone).")
@click.option("--to", "end", required=True, help="Last tick (ISO 8601, with a zone).")
@click.option("--tenant", default="default", show_default=True)
def backfill_cmd(name: str, start: str, end: str, tenant: str) -> None:
    """Start one run per tick of a cron workflow's schedule from --from to --to."""
    with _refused(ValueError):
        done = cron.backfill(name, tenant, start, end)
    click.echo(f"backfill {name}: {done}")


def _payload(text: str | None) -> object:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.ClickException(f"--payload is not JSON: {exc}") from None


_REFUSED = (messages.RunNotFound, messages.RunNotOpen, messages.MessageError)


@workflows_cli.command("signal")
@click.argument("run_id")
@click.argument("name")
@click.option("--payload", default=None, help="The signal's payload, as JSON.")
@click.option("--key", default=None, help="An idempotency key: sent once per key.")
@click.option("--tenant", default="default", show_default=True)
def signal_cmd(run_id: str, name: str, payload: str | None, key: str | None, tenant: str) -> None:
    """Send a signal to a run (kept until a wait for it takes it)."""
    with _refused(*_REFUSED):
        signal_id = client.signal(run_id, name, _payload(payload), key=key, tenant=tenant)
    click.echo(f"signal {name} sent to run {run_id}: {signal_id}")


@workflows_cli.command("update")
@click.argument("run_id")
@click.argument("name")
@click.option("--payload", default=None, help="The update's payload, as JSON.")
@click.option("--key", default=None, help="An idempotency key: asked once per key.")
@click.option("--timeout", default=client.DEFAULT_TIMEOUT, show_default=True, type=float)
@click.option("--tenant", default="default", show_default=True)
def update_cmd(
    run_id: str, name: str, payload: str | None, key: str | None, timeout: float, tenant: str
) -> None:
    """Send an update to a run and print its answer (exit 1 unless accepted)."""
    with _refused(*_REFUSED):
        answer = client.update(run_id, name, _payload(payload), timeout, key=key, tenant=tenant)
    click.echo(
        json.dumps({"outcome": answer.outcome, "value": answer.value, "reason": answer.reason})
    )
    if not answer.accepted:
        raise SystemExit(1)
