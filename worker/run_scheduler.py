"""The rq-scheduler process: `python -m worker.run_scheduler`.

It makes the schedule match the job registry (stable ids: a restart never
duplicates an entry), then moves due jobs to the queues, once a second. On top
of rq-scheduler's own loop it:

- checks every `SCHEDULER_RESYNC_SECONDS` (default 15) that Redis still holds
  every entry, and writes back the missing ones (Redis flushed, restarted empty
  or replaced); after such a loss it also asks for one dispatch and one run of
  every per-minute job at once (the resume sweep), so timers whose Redis job was
  lost resume without waiting for the next minute;
- rides out a Redis outage: logs once, retries with backoff, carries on;
- stops at SIGINT or SIGTERM: the tick in hand is finished, then it leaves
  rq-scheduler's lock and registry and exits (also in the middle of an outage).

rq-scheduler's lock lets only one of several schedulers enqueue at a time.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable

from redis.exceptions import RedisError
from rq_scheduler import Scheduler

from webapp.core.config import ConfigError
from webapp.core.logs import setup
from webapp.core.redis_conn import redis_for
from webapp.health import liveness
from webapp.jobs.queue import DISPATCH_FUNC, enqueue
from webapp.jobs.registry import registered_jobs
from webapp.jobs.schedule import CRON_TICK_FUNC, missing_entries, sync_schedule
from worker.resilience import Backoff, Outage, stop_on_signals
from worker.tasks import _worker_app

log = logging.getLogger(__name__)


def catch_up() -> None:
    """After Redis lost the schedule: one dispatch and one tick of every
    per-minute job (the sweeps) now, instead of at the next minute."""
    enqueue(DISPATCH_FUNC)
    for spec in registered_jobs():
        if spec.cron == "* * * * *":
            enqueue(CRON_TICK_FUNC, spec.name)


class ScheduleKeeper:
    """rq-scheduler's run loop, made to survive outages and lost entries."""

    def __init__(
        self,
        scheduler: Scheduler,
        resync_seconds: float,
        on_restored: Callable[[], None] = catch_up,
        stop: threading.Event | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.resync_seconds = resync_seconds
        self.on_restored = on_restored
        self.stop = stop or threading.Event()
        self.synced = False
        self.next_check = 0.0

    def check_schedule(self) -> None:
        if not self.synced:
            actions = sync_schedule(self.scheduler)
            self.synced = True
            log.info(
                "schedule synced",
                extra={"entries": ",".join(f"{k}:{v}" for k, v in sorted(actions.items()))},
            )
        else:
            missing = missing_entries(self.scheduler)
            if missing:
                sync_schedule(self.scheduler)
                log.warning(
                    "schedule entries were missing from Redis; restored",
                    extra={"entries": ",".join(missing)},
                )
                self.on_restored()
        self.next_check = time.monotonic() + self.resync_seconds

    def tick(self) -> None:
        s = self.scheduler
        if not s.connection.exists(s.key):
            s.register_birth()  # first tick, or Redis lost our key
        if time.monotonic() >= self.next_check:
            self.check_schedule()
        s.heartbeat()
        if s.acquire_lock():
            try:
                s.enqueue_jobs()
                s.heartbeat()
            finally:
                s.remove_lock()

    def run(self, interval: float = 1.0) -> None:
        outage = Outage("Redis", log)
        backoff = Backoff()
        while not self.stop.is_set():
            liveness.tick("scheduler", "schedule")
            started = time.monotonic()
            try:
                self.tick()
            except (RedisError, OSError) as exc:
                outage.failed(exc)
                self.stop.wait(backoff.delay())
                continue
            if outage.ok():
                backoff.reset()
                self.next_check = 0.0  # check the schedule right away after an outage
            self.stop.wait(max(0.0, interval - (time.monotonic() - started)))
        self.shutdown()

    def shutdown(self) -> None:
        try:
            self.scheduler.remove_lock()
            self.scheduler.register_death()
        except (RedisError, OSError):
            pass


def main(interval: float = 1.0) -> None:
    stop = stop_on_signals(threading.Event())  # a signal during start-up counts too
    try:
        app = _worker_app()
    except ConfigError as exc:
        sys.exit(f"configuration error: {exc}")
    cfg = app.config["APP_CONFIG"]
    setup(cfg.log_level, process="scheduler")
    scheduler = Scheduler(
        queue_name="default", connection=redis_for(cfg.redis_url), interval=int(interval)
    )
    keeper = ScheduleKeeper(scheduler, cfg.scheduler_resync_seconds, stop=stop)
    liveness.start(cfg, "scheduler")  # SCHEDULER_HEALTH_PORT, when set
    with app.app_context():  # catch_up enqueues through the app's Redis
        keeper.run(interval)
    log.info("scheduler stopped")


if __name__ == "__main__":
    main()
