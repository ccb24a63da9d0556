"""What becomes of a job that failed for a reason other than its own code (RQ
exception handlers of the worker, see run_worker):

- A service was unreachable (database or Redis): the job waits until both
  answer again and is then retried at once (RQ's retry, same job id), instead
  of waiting for the next sweep; at most `MAX_INFRA_RETRIES` times, after at
  most `OUTAGE_WAIT_S` of waiting. A stop ends the wait: the job goes back to
  the queue for another worker (or, with Redis down too, is left to the sweep).
- The database refused the job's write (its disk is full, or it is read-only:
  `webapp.core.writable`): it answers, so there is nothing to wait for but
  time; the job is retried after 5 s, 10 s, 20 s ... (at most a minute), up
  to `MAX_INFRA_RETRIES` times, then fails as usual and the sweeps redo its
  work once the database takes writes (nothing it did was committed).
- The worker was stopped cold (a second signal, more than a second after the
  first: RQ raises SystemExit in the job in hand): the job goes back to the
  queue under its id, for another worker, instead of being recorded as failed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from rq.job import Job

from webapp.core import writable
from worker.resilience import Outage, database_answers, is_infra_error, redis_answers, wait_until

log = logging.getLogger(__name__)

MAX_INFRA_RETRIES = 20  # per job; each retry only once the services answer again
OUTAGE_WAIT_S = 600.0  # a job waits this long for the services, then fails as usual
REFUSED_FIRST_S = 5.0  # a refused write: the first wait, doubled per retry ...
REFUSED_MAX_S = 60.0  # ... up to this

Handler = Callable[[Job, type[BaseException], BaseException, TracebackType | None], bool]


class JobFailures:
    """The handlers of one worker process; `stop` is its stop event."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.outage = Outage("database or Redis (job failed)", log)

    def handlers(self) -> list[Handler]:
        return [self.hand_back_on_cold_stop, self.retry_after_outage]

    def hand_back_on_cold_stop(
        self, job: Job, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> bool:
        if not (self.stop.is_set() and isinstance(exc, SystemExit)):
            return True
        _retry_now(job)
        log.warning(
            "job interrupted by a cold stop; handed back to the queue", extra={"job_id": job.id}
        )
        return False

    def retry_after_outage(
        self, job: Job, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> bool:
        if not is_infra_error(exc):
            return True
        retries = int(job.meta.get("infra_retries", 0))
        if retries >= MAX_INFRA_RETRIES:
            return True
        self.outage.failed(exc)
        if writable.refusal(exc):
            # It answers but refuses writes: only time helps (space freed, the
            # file or the database made writable again).
            self.stop.wait(min(REFUSED_MAX_S, REFUSED_FIRST_S * 2**retries))
            back = not self.stop.is_set() and redis_answers(job.connection)
        else:
            back = wait_until(
                lambda: database_answers() and redis_answers(job.connection),
                self.stop,
                deadline_s=OUTAGE_WAIT_S,
            )
        job.meta["infra_retries"] = retries + 1
        if back:
            self.outage.ok()
            _retry_now(job)
            log.info("job retried after an outage", extra={"job_id": job.id, "func": job.func_name})
        elif self.stop.is_set():
            _retry_now(job)  # reaches the queue if Redis answers, else the sweep redoes it
            log.warning(
                "job failed in an outage; handed back to the queue", extra={"job_id": job.id}
            )
        return True  # waited long enough: it fails as usual


def _retry_now(job: Job) -> None:
    job.retries_left = 1  # RQ enqueues it again at once, same id (handle_job_failure)
    job.retry_intervals = None
