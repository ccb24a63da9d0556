"""Flow controls declared on a workflow: how many runs may hold a slot at
once (`limit`), and in which order queued runs start (`priority`).

Pure data, checked when the workflow is defined; the store enforces them
(`webapp.workflows.store.slots`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webapp.eventstore.records import Event
from webapp.workflows.definition.errors import DefinitionError


class ControlError(DefinitionError):
    """A control is declared wrong, or its function gave a wrong value."""


@dataclass(frozen=True)
class Limit:
    """At most `max` runs of one key (or of the whole workflow, without a key)
    hold a slot at once: a run holds its slot from start until it settles,
    waiting included."""

    max: int
    key: Callable[[Event], Any] | None = None

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
    if slot != "held":
        raise ControlError(
            f"limit(slot={slot!r}): only slot='held' is supported (a waiting run keeps its slot)"
        )
    return Limit(max, key)


def priority_of(fn: Callable[[Event], Any] | None, event: Event) -> int:
    """The run's priority, 1 (last) to 5 (first); 3 without a function."""
    if fn is None:
        return 3
    value = fn(event)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ControlError(f"priority must be an integer from 1 to 5, got {value!r}")
    return value
