"""Cron triggers: one job per cron workflow, fanned out per tenant by the
scheduler (`webapp.jobs`). A tick's event and its run share an id made from
name + tick (`workflow-cron/<id>`, `workflow-run/<id>`), so a second
scheduler, a restart, a catch-up or a backfill never starts a tick twice:
the later one loses the tick stream's expected version and starts nothing.

The policies declared on the workflow (`definition.controls.cron_policies`):

- `overlap`, for a tick while a run of the workflow (same tenant) is open:
  "skip" records the tick as a skipped run (`workflow.run-skipped`, reason
  "overlap"); "buffer_one" queues it when nothing is queued yet (the slots of
  a limit of one, `Workflow.slot_limit`, start it when the open run settles)
  and skips it otherwise; "allow" starts it. The decision is made under the
  event store's append lock, taken before the tick's append, so two ticks
  never both see "none open".
- `catchup`: the scheduler's tick first fires, oldest first, the schedule's
  ticks after the last one that fired (`store.cron_ticks`) and within the
  window; each obeys `overlap`.
- `backfill`: one tick per schedule time of a range, asked for by an
  operator. Overlap does not skip them (each was asked for); a workflow
  limited to one open run queues them, so they run one after the other.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from croniter import croniter
from sqlalchemy import Connection

from webapp import tenants
from webapp.core import clock, db
from webapp.eventstore import NewEvent, StreamId, VersionConflict, append, hold_append_lock
from webapp.jobs.registry import JobSpec, register_job, unregister_job
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import CronTrigger, Workflow
from webapp.workflows.store import cron_ticks, slots
from webapp.workflows.store import run_events as ev
from webapp.workflows.triggers.start import skip_run, slot_of, start_run

log = logging.getLogger("webapp.workflows")

TICK_STREAM = "workflow-cron"
MAX_TICKS = 1_000  # ticks one backfill (or one catch-up) fires at most


def cron_job_name(wf: Workflow) -> str:
    return "workflow-" + re.sub(r"[^A-Za-z0-9_-]", "_", wf.name)


def mount(wf: Workflow) -> None:
    if not isinstance(wf.trigger, CronTrigger):
        return
    name = wf.name

    def tick(tenant_id: str | None, at: datetime) -> None:
        current = catalog.get(name)
        if current is not None and tenant_id is not None:
            fire(current, tenant_id, at)

    register_job(JobSpec(cron_job_name(wf), tick, wf.trigger.schedule, True, "skip"))


def unmount(wf: Workflow) -> None:
    if isinstance(wf.trigger, CronTrigger):
        unregister_job(cron_job_name(wf))


def _schedule(wf: Workflow) -> str:
    if not isinstance(wf.trigger, CronTrigger):
        raise ValueError(f"workflow {wf.name!r} is not a cron workflow")
    return wf.trigger.schedule


def due_tick(schedule: str, at: datetime) -> datetime:
    """The schedule's tick a scheduler firing at `at` stands for: the latest
    at or before it (a busy queue or a restart made it late)."""
    at = at.astimezone(UTC)
    if croniter.match(schedule, at.replace(second=0, microsecond=0)):
        return at.replace(second=0, microsecond=0)
    return croniter(schedule, at).get_prev(datetime).astimezone(UTC)


def ticks_between(schedule: str, after: datetime, until: datetime, cap: int) -> list[datetime]:
    """The schedule's ticks with after < tick <= until, oldest first; at most
    cap + 1 of them (so a caller sees that there are more than `cap`)."""
    base = after.astimezone(UTC).replace(second=0, microsecond=0)
    it = croniter(schedule, base)
    out: list[datetime] = []
    while len(out) <= cap:
        t = it.get_next(datetime).astimezone(UTC)
        if t > until:
            break
        if t > after:
            out.append(t)
    return out


def ticks_before(schedule: str, since: datetime, before: datetime, cap: int) -> list[datetime]:
    """The newest cap + 1 (at most) of the schedule's ticks with
    since < tick < before, oldest first (counted back from `before`)."""
    it = croniter(schedule, before.astimezone(UTC))
    out: list[datetime] = []
    while len(out) <= cap:
        t = it.get_prev(datetime).astimezone(UTC)
        if t <= since:
            break
        out.append(t)
    return out[::-1]


def fire(wf: Workflow, tenant_id: str, at: datetime) -> list[str | None]:
    """The scheduler's tick at `at`: the missed ticks its catch-up window
    holds (oldest first), then the due one. The run id of each (None: it
    had fired already)."""
    schedule = _schedule(wf)
    due = due_tick(schedule, at)
    missed: list[datetime] = []
    if wf.catchup is not None:
        with db.reading() as conn:
            last = cron_ticks.last_tick(conn, tenant_id, wf.name)
        if last is not None:
            since = max(last, due - wf.catchup - timedelta(microseconds=1))
            missed = ticks_before(schedule, since, due, MAX_TICKS)
            if len(missed) > MAX_TICKS:
                log.warning(
                    "cron catch-up: only the newest ticks fire",
                    extra={"workflow": wf.name, "fired": MAX_TICKS},
                )
                missed = missed[1:]
    return [start_cron_run(wf, tenant_id, t) for t in [*missed, due]]


def start_cron_run(
    wf: Workflow, tenant_id: str, tick: datetime, backfill: bool = False
) -> str | None:
    """One run per (workflow, tick): its run id, started, queued or skipped
    (`overlap`); None when this tick fired already. `backfill`: asked for by
    an operator, never skipped for overlap (and marked in the tick event)."""
    stamp = tick.astimezone(UTC).replace(second=0, microsecond=0).isoformat()
    key = f"cron|{stamp}"
    run_id = ev.run_id_for(wf.name, key)
    payload: dict[str, object] = {"workflowName": wf.name, "tick": stamp}
    if backfill:
        payload["backfill"] = True
    try:
        with db.transaction() as conn:
            hold_append_lock(conn)
            trigger = append(
                conn,
                StreamId(tenant_id, TICK_STREAM, run_id),
                [NewEvent(ev.CRON_TICKED, payload)],
                0,
            )[0]
            if not backfill and overlaps(conn, wf, tenant_id):
                skip_run(conn, wf, tenant_id, trigger, run_id, key, ev.SKIPPED_OVERLAP)
                return run_id
            return start_run(conn, wf, tenant_id, trigger, key, slot_of(wf, trigger))
    except VersionConflict:
        return None


def overlaps(conn: Connection, wf: Workflow, tenant_id: str) -> bool:
    """Whether a new tick must be skipped: a run is open and overlap is
    "skip", or one is queued already and overlap is "buffer_one"."""
    if wf.overlap == "allow":
        return False
    holding, queued = slots.open_counts(conn, tenant_id, wf.name)
    if holding + queued == 0:
        return False
    return wf.overlap == "skip" or queued > 0


class Backfilled(NamedTuple):
    ticks: int
    started: int  # new runs (a workflow limited to one open run queues them)
    existed: int  # ticks that had fired already (started, queued or skipped)

    def __str__(self) -> str:
        return f"{self.ticks} ticks, {self.started} runs started, {self.existed} already existed"


def parse_time(option: str, value: str) -> datetime:
    """An ISO 8601 time with a time zone (ValueError names the option)."""
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{option}: an ISO 8601 time, got {value!r}") from None
    if at.tzinfo is None:
        raise ValueError(f"{option}: give a time zone (e.g. {value.strip()}Z or +00:00)")
    return at.astimezone(UTC)


def backfill_ticks(wf: Workflow, start: datetime, end: datetime) -> list[datetime]:
    """The schedule's ticks from `start` to `end` (both included) that a
    backfill fires; ValueError for a range that is reversed, reaches into
    the future or holds more than MAX_TICKS ticks."""
    schedule = _schedule(wf)
    if end < start:
        raise ValueError(f"--to {end.isoformat()} is before --from {start.isoformat()}")
    if end > clock.now():
        raise ValueError(f"--to {end.isoformat()} is in the future: backfill past ticks only")
    ticks = ticks_between(schedule, start - timedelta(microseconds=1), end, MAX_TICKS)
    if len(ticks) > MAX_TICKS:
        raise ValueError(
            f"the range holds more than {MAX_TICKS:,} ticks of {schedule!r}: "
            "backfill it in smaller ranges"
        )
    return ticks


def backfill(name: str, tenant_id: str, start: str, end: str) -> Backfilled:
    """`flask workflows backfill NAME --from START --to END`: one run per tick
    of the range, oldest first. A tick that fired already starts nothing, so
    a second backfill of the same range starts nothing. ValueError, naming
    what is wrong, before anything starts."""
    wf = catalog.get(name)
    if wf is None:
        raise ValueError(f"no workflow named {name!r} in the code")
    if not isinstance(wf.trigger, CronTrigger):
        raise ValueError(
            f"workflow {name!r} is not a cron workflow (its trigger: {wf.trigger.kind})"
        )
    with db.reading() as conn:
        if tenant_id not in tenants.all_ids(conn):
            raise ValueError(f"no tenant {tenant_id!r}")
    ticks = backfill_ticks(wf, parse_time("--from", start), parse_time("--to", end))
    started = sum(start_cron_run(wf, tenant_id, t, backfill=True) is not None for t in ticks)
    return Backfilled(len(ticks), started, len(ticks) - started)
