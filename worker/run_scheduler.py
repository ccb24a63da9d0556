"""The rq-scheduler process: `python -m worker.run_scheduler`.

It first makes the schedule match the job registry (stable ids: a restart never
duplicates an entry), then moves due jobs to the queues. rq-scheduler's own lock
lets only one of several schedulers enqueue at a time.
"""

from __future__ import annotations

import logging

from rq_scheduler import Scheduler

from webapp.jobs.schedule import sync_schedule
from webapp.logs import setup
from webapp.redis_conn import redis_for
from worker.tasks import _worker_app

log = logging.getLogger(__name__)


def main(interval: int = 1) -> None:
    app = _worker_app()
    cfg = app.config["APP_CONFIG"]
    setup(cfg.log_level, process="scheduler")
    scheduler = Scheduler(
        queue_name="default", connection=redis_for(cfg.redis_url), interval=interval
    )
    actions = sync_schedule(scheduler)
    log.info(
        "schedule synced",
        extra={"entries": ",".join(f"{k}:{v}" for k, v in sorted(actions.items()))},
    )
    scheduler.run()


if __name__ == "__main__":
    main()
