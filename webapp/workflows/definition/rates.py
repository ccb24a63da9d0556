"""Rate controls declared on a workflow: `throttle=rate(...)` (the excess
waits for the window), `rate_limit=rate(...)` (the excess is skipped) and
`debounce=quiet(...)` (the last trigger of a quiet period wins), and the
check of how they combine (`rates`). Pure data; the store enforces them
(`webapp.workflows.store.rates`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from webapp.eventstore.records import Event
from webapp.workflows.definition.controls import ControlError, control_key, positive_span


def _span(what: str, value: Any) -> timedelta:
    return positive_span(what, value)


@dataclass(frozen=True)
class Rate:
    """At most `count` runs of one key start within any window of `per`:
    as `throttle=` the excess waits for the window, as `rate_limit=` it is
    skipped."""

    count: int
    per: timedelta
    key: Callable[[Event], Any] | None = None

    def key_for(self, event: Event, field: str = "rate") -> str:
        """The run's rate key ("" without a key function: the whole workflow)."""
        return control_key(self.key, event, field)


def rate(
    count: int, per: str | timedelta = "PT1M", key: Callable[[Event], Any] | None = None
) -> Rate:
    """`throttle=rate(10, per="PT1M", key=...)`, `rate_limit=rate(1, per="PT1H", key=...)`."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ControlError(f"rate(count, ...) must be an integer >= 1, got {count!r}")
    if key is not None and not callable(key):
        raise ControlError("rate(key=...) must be a function of the trigger event")
    return Rate(count, _span("rate(per=...)", per), key)


@dataclass(frozen=True)
class Quiet:
    """Debounce: a run starts once no new trigger of its key came for
    `period`, with the last trigger; at the latest `max_wait` after the first."""

    period: timedelta
    key: Callable[[Event], Any] | None = None
    max_wait: timedelta | None = None

    def key_for(self, event: Event) -> str:
        return control_key(self.key, event, "debounce")


def quiet(
    period: str | timedelta,
    key: Callable[[Event], Any] | None = None,
    max_wait: str | timedelta | None = None,
) -> Quiet:
    """`debounce=quiet("PT30S", key=..., max_wait="PT5M")`."""
    span = _span("quiet(period)", period)
    if key is not None and not callable(key):
        raise ControlError("quiet(key=...) must be a function of the trigger event")
    longest = None if max_wait is None else _span("quiet(max_wait=...)", max_wait)
    if longest is not None and longest < span:
        raise ControlError(
            f"quiet(max_wait=...) must be at least the quiet period ({period!r}), got {max_wait!r}"
        )
    return Quiet(span, key, longest)


@dataclass(frozen=True)
class Rates:
    """A workflow's throttle, rate limit and debounce, checked together."""

    throttle: Rate | None = None
    rate_limit: Rate | None = None
    debounce: Quiet | None = None

    def __bool__(self) -> bool:
        return any((self.throttle, self.rate_limit, self.debounce))

    def key_for(self, event: Event) -> str | None:
        """The run's rate key (they share one; `rates` checked it); None: no rate control."""
        if self.debounce is not None:
            return self.debounce.key_for(event)
        if self.throttle is not None:
            return self.throttle.key_for(event, "throttle")
        if self.rate_limit is not None:
            return self.rate_limit.key_for(event, "rate_limit")
        return None


def _same_key(a: Callable[..., Any] | None, b: Callable[..., Any] | None) -> bool:
    """The same key function: the same object, or the same code with the same
    captured values (two `lambda e: e.payload["userId"]` are the same key)."""
    if a is b:
        return True
    ca, cb = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if ca is None or cb is None:
        return False
    same_code = (ca.co_code, ca.co_consts, ca.co_names) == (cb.co_code, cb.co_consts, cb.co_names)
    cells = [tuple(c.cell_contents for c in (f.__closure__ or ())) for f in (a, b)]  # type: ignore[union-attr]
    return same_code and cells[0] == cells[1]


def rates(
    name: str,
    throttle: Any,
    rate_limit: Any,
    debounce: Any,
    concurrency: Any,
    cron: bool = False,
    child: bool = False,
) -> Rates:
    """`throttle=`, `rate_limit=` and `debounce=` checked, alone and together:
    a combination that contradicts itself is refused, naming the fields."""
    for field, value, kind, builder in (
        ("throttle", throttle, Rate, "rate(count, per=..., key=...)"),
        ("rate_limit", rate_limit, Rate, "rate(count, per=..., key=...)"),
        ("debounce", debounce, Quiet, "quiet(period, key=..., max_wait=...)"),
    ):
        if value is not None and not isinstance(value, kind):
            raise ControlError(f"workflow {name!r}: {field}= takes {builder}, got {value!r}")
    if child and (throttle is not None or rate_limit is not None or debounce is not None):
        field = next(
            f
            for f, v in (("throttle", throttle), ("rate_limit", rate_limit), ("debounce", debounce))
            if v is not None
        )
        raise ControlError(
            f"workflow {name!r}: {field}= does not apply to a child workflow "
            "(its parent's run_workflow step starts it)"
        )
    if cron and (throttle is not None or debounce is not None):
        field = "throttle" if throttle is not None else "debounce"
        raise ControlError(
            f"workflow {name!r}: {field}= does not apply to a cron workflow "
            "(its schedule paces its runs; overlap= says what a tick does while one is open)"
        )
    if throttle is not None and debounce is not None:
        raise ControlError(
            f"workflow {name!r}: throttle= and debounce= cannot be combined "
            "(a debounce starts one run per quiet period already)"
        )
    if concurrency is not None and (throttle is not None or debounce is not None):
        field = "throttle" if throttle is not None else "debounce"
        raise ControlError(
            f"workflow {name!r}: {field}= and concurrency= cannot be combined yet "
            "(a queued run would wait for two things)"
        )
    keyed = debounce if debounce is not None else throttle
    if rate_limit is not None and keyed is not None and not _same_key(keyed.key, rate_limit.key):
        field = "debounce" if debounce is not None else "throttle"
        raise ControlError(
            f"workflow {name!r}: {field}= and rate_limit= must use the same key function "
            f"(a {field} and a rate limit on different keys contradict each other)"
        )
    return Rates(throttle, rate_limit, debounce)
