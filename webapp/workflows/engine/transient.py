"""Infrastructure errors: the database or Redis went away for a moment.

Such an error inside a step is not the step's failure: the engine waits with
backoff and runs the step again from the last committed state, without
touching the step's `retry` budget, and never ends the run as failed. When the
outage outlasts the budget here, the run is left to its lease: once it
expires, the sweep re-dispatches the run.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import DBAPIError, OperationalError
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential, wait_random

log = logging.getLogger("webapp.workflows")

# PostgreSQL: serialization failure, deadlock, connection exceptions (class 08),
# operator intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now),
# a refused write (53100 disk full, 25006 read-only transaction: the run waits, it has not failed).
RETRYABLE_SQLSTATES = ("40001", "40P01", "57P01", "57P02", "57P03", "53100", "25006")
RETRYABLE_CLASSES = ("08",)

# How long the engine keeps trying in place before leaving the run to its lease.
BUDGET_S = 30.0
FIRST_WAIT_S = 0.05
MAX_WAIT_S = 5.0


# Errors of other services that mean "gone for a moment" (the dispatch layer
# adds Redis's: the engine itself never talks to Redis).
_transient: tuple[type[BaseException], ...] = ()


def register_transient(*types: type[BaseException]) -> None:
    global _transient
    _transient = tuple(dict.fromkeys((*_transient, *types)))


def is_infrastructure(exc: BaseException) -> bool:
    if isinstance(exc, _transient):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated or isinstance(exc, OperationalError):
            return True
        state = getattr(exc.orig, "sqlstate", None) or ""
        return state in RETRYABLE_SQLSTATES or state[:2] in RETRYABLE_CLASSES
    return False


def retrying(budget_s: float | None = None) -> Retrying:
    """A tenacity policy for infrastructure errors only (others raise at once)."""
    return Retrying(
        retry=retry_if_exception(is_infrastructure),
        wait=wait_exponential(multiplier=FIRST_WAIT_S, max=MAX_WAIT_S)
        + wait_random(0, FIRST_WAIT_S),
        stop=stop_after_delay(BUDGET_S if budget_s is None else budget_s),
        before_sleep=_log_retry,
        reraise=True,
    )


def _log_retry(state: object) -> None:
    outcome = getattr(state, "outcome", None)
    exc = outcome.exception() if outcome is not None else None
    attempt = getattr(state, "attempt_number", 0)
    if attempt == 1:  # once per outage, not once per attempt
        log.warning(
            "infrastructure error in a workflow step; retrying with backoff",
            extra={"error_class": type(exc).__name__},
        )
