"""Riding out an outage of Redis or the database in a background process.

An outage is never a reason for a worker or a scheduler to exit: it logs once
when the outage starts and once when it ends, waits with a capped exponential
backoff, and carries on. Work that failed because of the outage is handed back
(see run_worker) as soon as the services answer again.

A stop request is: SIGINT or SIGTERM sets the process's stop event
(`stop_on_signals`), which every loop and wait here checks, so a stop is never
mistaken for an outage and never waits out a backoff.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from webapp.core import db
from webapp.workflows.engine.transient import is_infrastructure

log = logging.getLogger(__name__)


def is_infra_error(exc: BaseException | None) -> bool:
    """A service was unreachable (the engine's classification, plus a dropped
    driver connection and the builtin connection errors), not "this job is wrong"."""
    if exc is None:
        return False
    return is_infrastructure(exc) or isinstance(exc, InterfaceError | ConnectionError)


class Backoff:
    """0.5 s, 1 s, 2 s, ... capped; `reset()` after a success."""

    def __init__(self, first: float = 0.5, cap: float = 5.0) -> None:
        self.first, self.cap = first, cap
        self.next = first

    def delay(self) -> float:
        current = self.next
        self.next = min(self.cap, self.next * 2)
        return current

    def reset(self) -> None:
        self.next = self.first


class Outage:
    """Logs the start and the end of one outage, not every failed attempt."""

    def __init__(self, what: str, logger: logging.Logger = log) -> None:
        self.what = what
        self.logger = logger
        self.down = False

    def failed(self, exc: BaseException) -> None:
        if not self.down:
            self.down = True
            self.logger.warning(
                f"{self.what} unavailable; retrying with backoff",
                extra={"error_class": type(exc).__name__},
            )

    def ok(self) -> bool:
        """True when this ends an outage."""
        if self.down:
            self.down = False
            self.logger.warning(f"{self.what} available again; carrying on")
            return True
        return False


def stop_on_signals(stop: threading.Event) -> threading.Event:
    """From now on SIGINT and SIGTERM set `stop` (and do nothing else): the
    process finishes what it is doing and exits. Returns `stop`."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def redis_answers(conn: Redis) -> bool:
    try:
        return bool(conn.ping())
    except (RedisConnectionError, RedisTimeoutError, OSError):
        return False


def database_answers() -> bool:
    try:
        db.ping()
        return True
    except (OperationalError, InterfaceError, DBAPIError, OSError):
        return False


def wait_until(
    ready: Callable[[], bool],
    stop: threading.Event | None = None,
    backoff: Backoff | None = None,
    deadline_s: float | None = None,
) -> bool:
    """Poll `ready()` with backoff until it is true (True), `stop` is set or the
    deadline passes (False)."""
    backoff = backoff or Backoff()
    stop = stop or threading.Event()
    waited = 0.0
    while not stop.is_set():
        if ready():
            return True
        if deadline_s is not None and waited >= deadline_s:
            return False
        pause = backoff.delay()
        stop.wait(pause)
        waited += pause
    return False
