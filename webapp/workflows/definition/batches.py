"""Event batching declared on a workflow: `batch=collect(max=50,
within="PT5M", key=...)` starts one run for up to `max` trigger events of a
key, collected for at most `within` after the first; the run reads them in
log order as `ctx.trigger_batch`. Pure data and the check of what it may be
combined with (`batching`); the store collects and starts the batches
(`webapp.workflows.store.batches`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from webapp.eventstore.records import Event
from webapp.workflows.definition.controls import ControlError, control_key, positive_span

MAX_BATCH = 1000  # events in one batch: a run's trigger batch is read at every resume


@dataclass(frozen=True)
class Batch:
    """Up to `max` events of one key in one run, collected for at most `within`."""

    max: int
    within: timedelta
    key: Callable[[Event], Any] | None = None

    def key_for(self, event: Event) -> str:
        """The batch key ("" without a key function: one batch for the workflow)."""
        return control_key(self.key, event, "batch")


def collect(
    max: int, within: str | timedelta = "PT1M", key: Callable[[Event], Any] | None = None
) -> Batch:
    """`batch=collect(max=50, within="PT5M", key=lambda e: e.payload["postId"])`."""
    if isinstance(max, bool) or not isinstance(max, int) or not 1 <= max <= MAX_BATCH:
        raise ControlError(
            f"collect(max=...) must be an integer from 1 to {MAX_BATCH}, got {max!r}"
        )
    if key is not None and not callable(key):
        raise ControlError("collect(key=...) must be a function of the trigger event")
    return Batch(max, positive_span("collect(within=...)", within, "PT5M"), key)


def batching(name: str, batch: Any, **others: Any) -> Batch | None:
    """`batch=` checked, alone and with the workflow's other controls
    (`others`: field name -> declared value, or a bool for the trigger kind):
    a combination that contradicts itself is refused, naming the fields."""
    if batch is None:
        return None
    if not isinstance(batch, Batch):
        raise ControlError(
            f"workflow {name!r}: batch= takes collect(max=..., within=..., key=...), got {batch!r}"
        )
    why = {
        "cron": "a cron tick is not an event to collect",
        "child": "its parent's run_workflow step starts it with one input",
        "key": "an idempotency key starts one run per event's key; the batch key= groups them",
        "debounce": "a debounce keeps only the last trigger; a batch keeps them all",
        "throttle": "a batch is already one run per window",
        "rate_limit": "a rate limit would skip events a batch promised to keep",
        "concurrency": "not supported yet (a full batch would wait for a slot)",
        "singleton": "not supported yet (a batch would be skipped or replaced whole)",
    }
    for field, reason in why.items():
        if others.get(field):
            raise ControlError(
                f"workflow {name!r}: batch= and {field}= cannot be combined ({reason})"
            )
    return batch
