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
  same job id), instead of waiting for the next sweep (worker.job_failures).

A stop never restarts: SIGINT or SIGTERM sets one stop event (ours, not RQ's
private flag, which RQ leaves unset when the worker is idle) that the RQ loop,
the outage wait, the resume loop and the timer all check. The job in hand is
finished, the threads claim nothing more, and the process exits. A second
signal more than a second after the first is RQ's cold stop: the job in hand
is interrupted and handed back to the queue (its effects roll back with its
transaction), for another worker (worker.job_failures).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from types import FrameType
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from rq import Queue, SimpleWorker, Worker
from rq.exceptions import StopRequested
from rq.job import Job

from webapp.core.config import ConfigError
from webapp.core.logs import routine_level, setup
from webapp.core.redis_conn import worker_client
from webapp.health import liveness
from webapp.jobs.queue import QUEUES
from webapp.workflows.dispatch import holders, pg_wake
from webapp.workflows.dispatch import resume_loop as resumer
from webapp.workflows.dispatch import timer_loop as timer
from worker.job_failures import JobFailures
from worker.resilience import Backoff, Outage, redis_answers, stop_on_signals, wait_until
from worker.tasks import _worker_app

log = logging.getLogger(__name__)

THREADS_STOP_S = 5.0  # on a stop, how long the resume loop and the timer may finish


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


class _AppWorker:
    """What our RQ workers add to RQ's:

    - the job in flight is remembered, to enqueue it again if Redis vanished under it;
    - a stop signal sets `stopping` before RQ handles it. RQ itself only sets its
      own flag when a job is running (when idle it raises StopRequested out of the
      wait for a job), so its loop ending cannot tell a stop from an outage; ours can.
    """

    in_flight: Job | None = None
    stopping: threading.Event  # set by run() before work()
    loop_ended = False

    def execute_job(self, job: Job, queue: Queue) -> None:
        self.in_flight = job
        super().execute_job(job, queue)  # type: ignore[misc]
        self.in_flight = None

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        first = not self.stopping.is_set()
        self.stopping.set()
        if first:  # ours, not RQ's "warm shut down requested", which is INFO (routine)
            log.info("stop requested: the job in hand is finished, no other is taken")
        if self.loop_ended:  # RQ's handler, still installed for an instant after the loop
            return
        try:  # idle: raises StopRequested (caught by RQ's loop); busy: sets RQ's flag
            super().request_stop(signum, frame)  # type: ignore[misc]
        except (RedisError, OSError) as exc:  # busy in an outage: RQ could not record it
            log.warning(
                "stop requested during an outage", extra={"error_class": type(exc).__name__}
            )

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        if self.stopping.is_set():  # the signal came before RQ installed its handlers
            return None  # RQ's loop ends
        return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)  # type: ignore[misc]

    def teardown(self) -> None:
        self.loop_ended = True
        super().teardown()  # type: ignore[misc]


class AppSimpleWorker(_AppWorker, SimpleWorker):
    pass


class AppForkWorker(_AppWorker, Worker):
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


def run(
    conn: Redis, log_level: str, worker_class: type[Any], name: str, stop: threading.Event
) -> None:
    """Run RQ workers until `stop` is set (a signal); an outage restarts the loop."""
    outage = Outage("Redis", log)
    failures = JobFailures(stop)
    generation = 0
    while not stop.is_set():
        generation += 1
        w: Any = None
        error: BaseException | None = None
        try:  # building the worker talks to Redis too (it may be down at start)
            w = worker_class(
                list(QUEUES),
                connection=conn,
                name=name if generation == 1 else f"{name}.{generation}",
                exception_handlers=failures.handlers(),
            )
            w.stopping = stop
            w.max_connection_wait_time = 5.0  # RQ's own reconnect backoff while dequeueing
            # RQ's own start-up line is one of its routine ones (webapp.core.logs)
            log.info("taking jobs", extra={"queues": ",".join(QUEUES), "generation": generation})
            # RQ sets its loggers' level from this: its routine lines at WARNING
            w.work(with_scheduler=False, logging_level=routine_level(log_level))
        except StopRequested:  # a signal while RQ's loop was ending
            pass
        except (RedisError, OSError) as exc:  # RQ's start or teardown without Redis
            error = exc
        stop_on_signals(stop)  # RQ's handlers belong to the loop that ended
        if w is not None:
            _stop_pubsub(w)
        if stop.is_set():
            return
        # The RQ loop ended on its own: an outage (or a bug in RQ's bookkeeping).
        outage.failed(error or ConnectionError("worker loop ended"))
        if not wait_until(lambda: redis_answers(conn), stop, Backoff()):
            return
        outage.ok()
        if w is not None and w.in_flight is not None:
            _enqueue_again(conn, w.in_flight)


def join(threads: list[threading.Thread], within_s: float) -> None:
    deadline = time.monotonic() + within_s
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


def main() -> None:
    stop = stop_on_signals(threading.Event())  # a signal during start-up counts too
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
    # So does the resume loop: a step due now is claimed by a thread that waits
    # for nothing else, not queued behind other jobs (webapp.workflows.dispatch.resume_loop).
    # Both stop claiming at the signal; the batch in hand is finished.
    # Its liveness key tells the others at once when it dies (holders: a run
    # it held continues in about two seconds, not after its lease).
    name, keeper = holders.start(app, stop)
    threads = [
        keeper,
        timer.start_thread(app, stop)[1],
        resumer.start_thread(app, stop, holder=name)[1],
    ]
    # On PostgreSQL a listener beside them takes the wake-ups that commits
    # send by NOTIFY, with no Redis hop (webapp.workflows.dispatch.pg_wake).
    if (listener := pg_wake.start_thread(app, stop)) is not None:
        threads.append(listener)
    liveness.start(cfg, "worker")  # WORKER_HEALTH_PORT, when set: the two loops above
    try:
        with app.app_context():
            run(
                worker_client(cfg.redis_url),
                cfg.log_level,
                worker_class,
                f"{socket.gethostname()}-{os.getpid()}",
                stop,
            )
    finally:
        stop.set()  # also when the loop ended by an error: the threads must not outlive it
        join(threads, THREADS_STOP_S)
    log.info("worker stopped")


if __name__ == "__main__":
    main()
