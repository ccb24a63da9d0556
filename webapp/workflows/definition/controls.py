"""Flow controls declared on a workflow: how many runs may hold a slot at
once (`limit`), in which order queued runs start (`priority`), the events
that cancel an open run (`on`, for `cancel_on=`), the run's deadline
(`timeout=`, `deadline`), what a cron workflow does with a tick that
arrives while its previous run is open (`overlap`) or that the scheduler
missed (`catchup`), and how many may start per window (`rate`, for
`throttle=` and `rate_limit=`) or after a quiet period (`quiet`, for
`debounce=`), checked together (`rates`).

Pure data, checked when the workflow is defined; the store enforces them
(`webapp.workflows.store.slots`, `webapp.workflows.store.rates`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from webapp.eventstore.records import Event
from webapp.workflows.definition import match as matchmod
from webapp.workflows.definition.durations import parse_duration
from webapp.workflows.definition.errors import DefinitionError


class ControlError(DefinitionError):
    """A control is declared wrong, or its function gave a wrong value."""


@dataclass(frozen=True)
class Limit:
    """At most `max` runs of one key (or of the whole workflow, without a key)
    hold a slot at once: a run holds its slot from start until it settles,
    waiting included (`slot="held"`), or only while it runs (`slot="active"`:
    a resumed run takes a slot again, and waits for one when none is free)."""

    max: int
    key: Callable[[Event], Any] | None = None
    slot: str = "held"  # "active": a waiting run gives its slot back until it resumes

    def key_for(self, event: Event) -> str:
        """The run's concurrency key ("" for a workflow-wide limit)."""
        if self.key is None:
            return ""
        value = self.key(event)
        if value is None:
            raise ControlError("the concurrency key function returned None")
        text = str(value)
        if len(text) > 200:
            raise ControlError("a concurrency key is at most 200 characters")
        return text


def limit(max: int, key: Callable[[Event], Any] | None = None, slot: str = "held") -> Limit:
    """`concurrency=limit(max=3, key=lambda event: event.payload["customerId"])`."""
    if isinstance(max, bool) or not isinstance(max, int) or max < 1:
        raise ControlError(f"limit(max=...) must be an integer >= 1, got {max!r}")
    if key is not None and not callable(key):
        raise ControlError("limit(key=...) must be a function of the trigger event")
    if slot not in ("held", "active"):
        raise ControlError(
            f"limit(slot={slot!r}): slot is 'held' (a waiting run keeps its slot) or "
            "'active' (it gives the slot back while it waits)"
        )
    return Limit(max, key, slot)


def priority_of(fn: Callable[[Event], Any] | None, event: Event) -> int:
    """The run's priority, 1 (last) to 5 (first); 3 without a function."""
    if fn is None:
        return 3
    value = fn(event)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ControlError(f"priority must be an integer from 1 to 5, got {value!r}")
    return value


@dataclass(frozen=True)
class CancelOn:
    """An event that cancels the open run it matches: `match` is a match
    expression (or a function of the run context giving one; None: any event
    of the type in the run's tenant), evaluated when the run starts and kept."""

    event_type: str
    match: Any = None


def on(event_type: str, match: Any = None) -> CancelOn:
    """`cancel_on=[on("order.cancelled", match=lambda ctx: match.eq("orderId", ...))]`."""
    if not isinstance(event_type, str) or not 0 < len(event_type.strip()) <= 150:
        raise ControlError(f"on(...) takes an event type (1-150 characters), got {event_type!r}")
    if match is not None and not callable(match):
        try:  # a wrong node fails here, not when a run starts
            matchmod.persist(match)
        except Exception as exc:
            raise ControlError(f"on({event_type!r}, match=...): {exc}") from None
    return CancelOn(event_type.strip(), match)


def cancel_events(name: str, value: Any) -> tuple[CancelOn, ...]:
    """`cancel_on=` checked: a list of `on(...)`, at most 20."""
    if value is None:
        return ()
    items = tuple(value) if isinstance(value, list | tuple) else None
    if items is None or not all(isinstance(c, CancelOn) for c in items):
        raise ControlError(f"workflow {name!r}: cancel_on= takes a list of on(event_type, ...)")
    if len(items) > 20:
        raise ControlError(f"workflow {name!r}: cancel_on= takes at most 20 events")
    return items


def positive_span(what: str, value: Any, example: str = "PT1M") -> timedelta:
    """An ISO-8601 duration (or a timedelta) above zero, for `what` (the
    field the error names)."""
    try:
        span = value if isinstance(value, timedelta) else parse_duration(value)
    except (ValueError, AttributeError, TypeError):
        raise ControlError(
            f"{what} takes an ISO-8601 duration such as {example}, got {value!r}"
        ) from None
    if span <= timedelta(0):
        raise ControlError(f"{what} must be above zero, got {value!r}")
    return span


def deadline(name: str, value: Any) -> timedelta | None:
    """`timeout=` checked: an ISO-8601 duration or a timedelta, above zero."""
    return None if value is None else positive_span(f"workflow {name!r}: timeout=", value, "P1D")


Overlap = Literal["skip", "buffer_one", "allow"]
OVERLAPS: tuple[Overlap, ...] = ("skip", "buffer_one", "allow")
# A cron workflow whose overlap is skip or buffer_one is limited to one run
# holding a slot (its key ""): the slots' queue starts its buffered tick.
ONE_RUN = Limit(1)


def cron_policies(
    name: str, cron: bool, overlap: Any, catchup: Any, concurrency: Limit | None
) -> tuple[Overlap, timedelta | None]:
    """Check a workflow's `overlap=` and `catchup=` (DefinitionError naming
    the field); the overlap in force ("skip" by default) and the window."""
    if not cron and (overlap is not None or catchup is not None):
        field = "overlap" if overlap is not None else "catchup"
        raise ControlError(f"workflow {name!r}: {field}= only applies to cron workflows")
    if overlap is not None and overlap not in OVERLAPS:
        raise ControlError(
            f"workflow {name!r}: overlap= must be 'skip', 'buffer_one' or 'allow', got {overlap!r}"
        )
    if overlap not in (None, "allow") and concurrency is not None:
        raise ControlError(
            f"workflow {name!r}: overlap={overlap!r} already allows one open run at a time; "
            "with concurrency= give overlap='allow'"
        )
    window = None
    if catchup is not None:
        try:
            window = catchup if isinstance(catchup, timedelta) else parse_duration(str(catchup))
        except ValueError:
            window = None
        if not isinstance(catchup, str | timedelta) or window is None or window <= timedelta(0):
            raise ControlError(
                f"workflow {name!r}: catchup= must be a positive ISO-8601 duration "
                f"such as 'PT1H', got {catchup!r}"
            )
    resolved: Overlap = overlap if overlap is not None else ("allow" if concurrency else "skip")
    return resolved, window


def control_key(fn: Callable[[Event], Any] | None, event: Event, field: str) -> str:
    """A flow control's key for `event` (rate, batch, singleton ...): "" without
    a key function (one key for the whole workflow); ControlError when the
    function fails, returns None or a key over 200 characters."""
    if fn is None:
        return ""
    try:
        value = fn(event)
    except Exception as exc:
        raise ControlError(f"the {field} key function failed ({type(exc).__name__})") from exc
    if value is None:
        raise ControlError(f"the {field} key function returned None")
    text = str(value)
    if len(text) > 200:
        raise ControlError(f"a {field} key is at most 200 characters")
    return text
