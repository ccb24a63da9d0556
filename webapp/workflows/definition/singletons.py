"""Singleton runs declared on a workflow: `singleton=one(key=..., mode=...)`
keeps at most one open run per key. A trigger that finds one open either
starts nothing (`mode="skip"`: a skipped run, reason "singleton") or cancels
it and starts afresh (`mode="replace"`: the open run is cancelled with reason
"replaced", in the new run's transaction). Pure data and the check of what it
may be combined with (`singleton_of`); the store decides
(`webapp.workflows.store.singletons`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from webapp.eventstore.records import Event
from webapp.workflows.definition.controls import ControlError, control_key

Mode = Literal["skip", "replace"]


@dataclass(frozen=True)
class Singleton:
    """At most one open run per key: a new trigger is skipped or replaces it."""

    mode: Mode = "skip"
    key: Callable[[Event], Any] | None = None

    def key_for(self, event: Event) -> str:
        """The singleton key ("" without a key function: the whole workflow)."""
        return control_key(self.key, event, "singleton")


def one(key: Callable[[Event], Any] | None = None, mode: str = "skip") -> Singleton:
    """`singleton=one(key=lambda e: e.payload["accountId"], mode="replace")`."""
    if mode not in ("skip", "replace"):
        raise ControlError(f"one(mode=...) must be 'skip' or 'replace', got {mode!r}")
    if key is not None and not callable(key):
        raise ControlError("one(key=...) must be a function of the trigger event")
    return Singleton("replace" if mode == "replace" else "skip", key)


def singleton_of(name: str, singleton: Any, **others: Any) -> Singleton | None:
    """`singleton=` checked, alone and with the workflow's other controls
    (`others`: field name -> declared value, or a bool for the trigger kind)."""
    if singleton is None:
        return None
    if not isinstance(singleton, Singleton):
        raise ControlError(
            f"workflow {name!r}: singleton= takes one(key=..., mode='skip'|'replace'), "
            f"got {singleton!r}"
        )
    why = {
        "cron": "a cron workflow's overlap= says what a tick does while a run is open",
        "child": "its parent's run_workflow step starts it",
        "key": "key= with on_duplicate already decides what a second trigger of a key does",
        "concurrency": "a singleton is a limit of one already",
        "throttle": "not supported yet (a queued run would be open before it starts)",
        "rate_limit": "not supported yet",
        "debounce": "a debounce already keeps one queued run per key",
    }
    for field, reason in why.items():
        if others.get(field):
            raise ControlError(
                f"workflow {name!r}: singleton= and {field}= cannot be combined ({reason})"
            )
    return singleton
