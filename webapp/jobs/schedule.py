"""Registering jobs with rq-scheduler and running a cron tick.

Schedule entries have stable ids (`cron-<job>`), so restarting the scheduler
replaces an entry instead of adding a second one. A tick is claimed in Redis
(`SET NX` on job + minute), so two schedulers never fire it twice, and each
per-tenant run holds a `skip` lock while it runs.
"""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from redis import Redis
from rq_scheduler import Scheduler

from webapp.jobs.queue import DISPATCH_FUNC
from webapp.jobs.registry import JobSpec, get_job, registered_jobs

log = logging.getLogger(__name__)

# rq-scheduler calls crontab without `default_utc`; we pass UTC explicitly
# (use_local_timezone=False), so its notice about the future default is noise.
warnings.filterwarnings("ignore", message="Version 0.22.0", category=FutureWarning)

CRON_TICK_FUNC = "worker.tasks.cron_tick"
RUN_JOB_FUNC = "worker.tasks.run_job"
SWEEP_ID = "interval-dispatch-sweep"
SWEEP_SECONDS = 15


def sync_schedule(scheduler: Scheduler) -> dict[str, str]:
    """Make rq-scheduler hold exactly one entry per registered cron job."""
    wanted = {spec.schedule_id: spec for spec in registered_jobs() if spec.cron}
    existing = {
        j.id: j for j in scheduler.get_jobs() if j.id and j.id.startswith(("cron-", "interval-"))
    }
    actions: dict[str, str] = {}
    for job_id, j in existing.items():
        spec = wanted.get(job_id)
        if job_id == SWEEP_ID:
            continue
        if spec is None or j.meta.get("cron_string") != spec.cron:
            scheduler.cancel(j)
            actions[job_id] = "removed"
    for job_id, spec in wanted.items():
        if job_id in existing and actions.get(job_id) != "removed":
            actions[job_id] = "kept"
            continue
        assert spec.cron is not None
        scheduler.cron(
            spec.cron,
            func=CRON_TICK_FUNC,
            args=[spec.name],
            id=job_id,
            queue_name="default",
            use_local_timezone=False,
            timeout=spec.timeout,
        )
        actions[job_id] = "added" if job_id not in existing else "replaced"
    if SWEEP_ID not in existing:
        scheduler.schedule(
            scheduled_time=datetime.now(UTC),
            func=DISPATCH_FUNC,
            interval=SWEEP_SECONDS,
            repeat=None,
            id=SWEEP_ID,
            queue_name="default",
        )
        actions[SWEEP_ID] = "added"
    else:
        actions[SWEEP_ID] = "kept"
    return actions


def entries(scheduler: Scheduler) -> list[tuple[str, datetime | None]]:
    """Each entry `sync_schedule` makes, with its next run time as Redis holds it
    (None: missing, after a FLUSHALL or a Redis restarted empty or replaced).
    Cheap: one ZSCORE and one EXISTS per entry, never a scan of every scheduled job."""
    wanted = [spec.schedule_id for spec in registered_jobs() if spec.cron] + [SWEEP_ID]
    conn = scheduler.connection
    with conn.pipeline(transaction=False) as pipe:
        for job_id in wanted:
            pipe.zscore(scheduler.scheduled_jobs_key, job_id)
            pipe.exists(scheduler.job_class.key_for(job_id))
        answers = pipe.execute()
    return [
        (job_id, datetime.fromtimestamp(score, UTC) if score is not None and exists else None)
        for job_id, score, exists in zip(wanted, answers[::2], answers[1::2], strict=True)
    ]


def missing_entries(scheduler: Scheduler) -> list[str]:
    """Ids of the entries `sync_schedule` makes that Redis does not hold."""
    return [job_id for job_id, at in entries(scheduler) if at is None]


def tick_time(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(second=0, microsecond=0)


def claim_tick(redis: Redis, name: str, tick: datetime) -> bool:
    """True for the first claimant of (job, minute); two schedulers cannot both fire."""
    key = f"webapp:tick:{name}:{tick.strftime('%Y%m%dT%H%M')}"
    return bool(redis.set(key, "1", nx=True, ex=int(timedelta(days=1).total_seconds())))


def fan_out(
    redis: Redis,
    name: str,
    at: datetime,
    tenant_ids: list[str],
    enqueue: Callable[..., object],
) -> int:
    """Enqueue one run per tenant (or one run) for the tick containing `at`."""
    spec = get_job(name)
    tick = tick_time(at)
    if not claim_tick(redis, name, tick):
        log.info("tick already fired", extra={"job": name, "tick": tick.isoformat()})
        return 0
    targets: list[str | None] = list(tenant_ids) if spec.per_tenant else [None]
    stamp = tick.strftime("%Y%m%dT%H%M")
    for tenant in targets:
        enqueue(
            RUN_JOB_FUNC,
            name,
            tenant,
            tick.isoformat(),
            job_id=f"job-{name}-{tenant or 'all'}-{stamp}",
        )
    return len(targets)


class SkipLock:
    """A Redis lock per (job, tenant) for concurrency `skip`; expires after the
    job's timeout so a killed worker never blocks the job for ever."""

    def __init__(self, redis: Redis, spec: JobSpec, tenant: str | None) -> None:
        self.redis = redis
        self.key = f"webapp:joblock:{spec.name}:{tenant or 'all'}"
        self.ttl = spec.timeout
        self.token = uuid.uuid4().hex

    def acquire(self) -> bool:
        return bool(self.redis.set(self.key, self.token, nx=True, ex=self.ttl))

    def release(self) -> None:
        # Delete only our own lock (compare-and-delete in one step).
        self.redis.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
            1,
            self.key,
            self.token,
        )
