"""The RQ worker for the app's queues: `python -m worker.run_worker`.

SimpleWorker runs jobs in this process (no fork per job): the app, its engine
and its connection pool are built once. Crash safety does not come from process
isolation but from the database: every job commits its effects with its cursor
or claim, so a killed worker loses nothing that a sweep will not redo.

Outages never end the process:
- Redis gone: RQ's loop ends (heartbeat, bookkeeping); we wait for Redis with
  backoff, start a fresh RQ worker and enqueue again the job that was in
  flight (jobs are idempotent: effects commit with their claim or cursor).
- Database gone: a job that fails with a connection error waits until the
  database (and Redis) answer again and is then retried at once (RQ's retry,
  same job id), instead of waiting for the next sweep.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from types import TracebackType
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue, SimpleWorker, Worker
from rq.job import Job

from webapp.config import ConfigError
from webapp.health import liveness
from webapp.jobs.queue import QUEUES
from webapp.logs import setup
from webapp.redis_conn import redis_for
from webapp.workflows.dispatch import resume_loop as resumer
from webapp.workflows.dispatch import timer_loop as timer
from worker.resilience import (
    Backoff,
    Outage,
    database_answers,
    is_infra_error,
    redis_answers,
    wait_until,
)
from worker.tasks import _worker_app

log = logging.getLogger(__name__)

MAX_INFRA_RETRIES = 20  # per job; each retry only once the services answer again
OUTAGE_WAIT_S = 600.0  # a job waits this long for the services, then fails as usual
RESUME_LOOP_STOP_S = 10.0  # on shutdown, how long the resume loop may finish its batch

_db_outage = Outage("database or Redis (job failed)", log)


def retry_after_outage(
    job: Job, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> bool:
    """RQ exception handler: a job that failed because a service was unreachable
    is retried as soon as the services answer (not counted as the job's failure)."""
    if not is_infra_error(exc):
        return True
    retries = int(job.meta.get("infra_retries", 0))
    if retries >= MAX_INFRA_RETRIES:
        return True
    _db_outage.failed(exc)
    back = wait_until(
        lambda: database_answers() and redis_answers(job.connection), deadline_s=OUTAGE_WAIT_S
    )
    if not back:
        return True
    _db_outage.ok()
    job.meta["infra_retries"] = retries + 1
    job.retries_left = 1  # RQ retries it right away, same id (handle_job_failure)
    job.retry_intervals = None
    log.info("job retried after an outage", extra={"job_id": job.id, "func": job.func_name})
    return True


class OncePerOutage(logging.Filter):
    """RQ logs every reconnect attempt while Redis is down; keep only the first
    (any other line from RQ means the connection works again)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "could not connect to Redis" in record.getMessage():
            if self.down:
                return False
            self.down = True
            return True
        self.down = False
        return True


class _TracksJob:
    """Remembers the job in flight, to enqueue it again if Redis vanished under it."""

    in_flight: Job | None = None

    def execute_job(self, job: Job, queue: Queue) -> None:
        self.in_flight = job
        super().execute_job(job, queue)  # type: ignore[misc]
        self.in_flight = None


class AppSimpleWorker(_TracksJob, SimpleWorker):
    pass


class AppForkWorker(_TracksJob, Worker):
    pass


def _enqueue_again(conn: Redis, job: Job) -> None:
    try:
        Queue(job.origin or "default", connection=conn).enqueue_call(
            func=str(job.func_name),
            args=job.args,
            kwargs=job.kwargs,
            timeout=int(job.timeout) if job.timeout else None,
            job_id=job.id,
        )
        log.warning(
            "job in flight during the Redis outage enqueued again", extra={"job_id": job.id}
        )
    except RedisError as exc:
        log.warning(
            "job in flight could not be enqueued again; the sweep will catch up",
            extra={"job_id": job.id, "error_class": type(exc).__name__},
        )


def _stop_pubsub(w: Any) -> None:
    """RQ's command listener thread outlives a loop that ended without Redis."""
    thread = getattr(w, "pubsub_thread", None)
    if thread is not None:
        with contextlib.suppress(Exception):
            thread.stop()


def run(conn: Redis, log_level: str, worker_class: type[Any], name: str) -> None:
    """Run RQ workers until a signal asks us to stop; an outage restarts the loop."""
    stop = threading.Event()
    outage = Outage("Redis", log)
    generation = 0
    while True:
        generation += 1
        w: Any = None
        error: BaseException | None = None
        try:  # building the worker talks to Redis too (it may be down at start)
            w = worker_class(
                list(QUEUES),
                connection=conn,
                name=name if generation == 1 else f"{name}.{generation}",
                exception_handlers=[retry_after_outage],
            )
            w.max_connection_wait_time = 5.0  # RQ's own reconnect backoff while dequeueing
            w.work(with_scheduler=False, logging_level=log_level)
        except (RedisError, OSError) as exc:  # RQ's start or teardown without Redis
            error = exc
        if w is not None:
            _stop_pubsub(w)
            if w._stop_requested:
                return
        if stop.is_set():
            return
        # The RQ loop ended on its own: an outage (or a bug in RQ's bookkeeping).
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        outage.failed(error or ConnectionError("worker loop ended"))
        if not wait_until(lambda: redis_answers(conn), stop, Backoff()):
            return
        outage.ok()
        if w is not None and w.in_flight is not None:
            _enqueue_again(conn, w.in_flight)


def main() -> None:
    try:
        app = _worker_app()
    except ConfigError as exc:
        sys.exit(f"configuration error: {exc}")
    cfg = app.config["APP_CONFIG"]
    setup(cfg.log_level, process="worker")
    logging.getLogger("rq.worker").addFilter(OncePerOutage())
    worker_class: type = AppSimpleWorker
    if os.environ.get("WORKER_CLASS") == "fork":
        worker_class = AppForkWorker
    # The precise workflow timer and the expired-lease check run beside the
    # jobs in every worker: a run whose worker died continues once any worker lives.
    timer.start_thread(app)
    # So does the resume loop: a step due now is claimed by a thread that waits
    # for nothing else, not queued behind other jobs (webapp.workflows.dispatch.resume_loop).
    stop_resumes, resumes = resumer.start_thread(app)
    liveness.start(cfg, "worker")  # WORKER_HEALTH_PORT, when set: the two loops above
    try:
        with app.app_context():
            run(
                redis_for(cfg.redis_url),
                cfg.log_level,
                worker_class,
                f"{socket.gethostname()}-{os.getpid()}",
            )
    finally:
        stop_resumes.set()  # the batch in hand is finished, the rest stays queued
        resumes.join(timeout=RESUME_LOOP_STOP_S)


if __name__ == "__main__":
    main()
