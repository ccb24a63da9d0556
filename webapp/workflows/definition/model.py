"""What a workflow definition is made of: triggers, steps, the workflow.

Plain frozen dataclasses; `webapp.workflows.definition.builders` builds and validates them, the
interpreter (`webapp.workflows.interpreter`) runs them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Any, Literal

from webapp.eventstore.records import Event
from webapp.workflows.definition.batches import Batch
from webapp.workflows.definition.controls import ONE_RUN, CancelOn, Limit, Overlap
from webapp.workflows.definition.errors import DefinitionError as DefinitionError  # re-exported
from webapp.workflows.definition.fingerprint import fingerprint, shape
from webapp.workflows.definition.rates import Quiet, Rate, Rates
from webapp.workflows.definition.singletons import Singleton

# -- the run context ------------------------------------------------------------

STATE = "$state"  # results key: the run's named state (`set_state`), read by clients
MAX_STATE_BYTES = 64 * 1024  # the state's JSON, all names together


@dataclass
class RunContext:
    """The trigger event, the results so far (by step name), the attempt."""

    tenant_id: str
    run_id: str
    workflow_name: str
    trigger: Event
    results: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    step_index: int = 0
    # Set by the run loop: appends a progress entry (`emit`).
    emitter: Callable[[str, Any], int] | None = field(default=None, repr=False, compare=False)
    batch: tuple[Event, ...] = ()  # a batched run's events (`batch=collect(...)`)

    @property
    def trigger_batch(self) -> list[Event]:
        """The events of the run's batch, in log order (`batch=collect(...)`);
        for a run that is not batched, its one trigger event."""
        return list(self.batch) if self.batch else [self.trigger]

    def __getitem__(self, name: str) -> Any:
        return self.results[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.results.get(name, default)

    def set_state(self, name: str, value: Any) -> None:
        """Set the run's named state `name` (JSON-able): what a client reads
        with `wf.state(run_id)`, committed with the step's progress."""
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValueError("set_state: the name must be text of 1 to 200 characters")
        state = dict(self.results.get(STATE) or {})
        state[name] = value
        try:
            size = len(json.dumps(state))
        except (TypeError, ValueError):
            raise TypeError(f"set_state {name!r}: the value is not JSON-serialisable") from None
        if size > MAX_STATE_BYTES:
            raise ValueError(f"set_state {name!r}: the state would exceed {MAX_STATE_BYTES} bytes")
        self.results[STATE] = state

    def emit(self, name: str, data: Any = None) -> int:
        """Append an entry to the run's progress stream (what a live page
        shows), committed at once: its number. Only in a running step."""
        if self.emitter is None:
            raise RuntimeError("emit: only inside a step of a running run")
        return self.emitter(name, data)


# -- triggers -------------------------------------------------------------------


@dataclass(frozen=True)
class EventTrigger:
    event_type: str
    filter: Callable[[Event], bool] | None = None
    kind: Literal["event"] = "event"


@dataclass(frozen=True)
class CronTrigger:
    schedule: str
    kind: Literal["cron"] = "cron"


@dataclass(frozen=True)
class WebhookTrigger:
    path: str
    secret: str  # name of a secret in config.secrets (env SECRET_<NAME>)
    tenant_id: str = "default"
    kind: Literal["webhook"] = "webhook"


@dataclass(frozen=True)
class ChildTrigger:
    """Started only by a parent's `run_workflow` step."""

    kind: Literal["child"] = "child"


Trigger = EventTrigger | CronTrigger | WebhookTrigger | ChildTrigger

# -- steps ----------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    name: str

    suspends = False  # wait / wait_for_event / retry may suspend the run
    uses_db = False  # runs inside a transaction together with the progress commit


@dataclass(frozen=True)
class Compute(Step):
    fn: Callable[[RunContext], Any]


@dataclass(frozen=True)
class Return(Step):
    value: Any


@dataclass(frozen=True)
class Branch(Step):
    condition: Any
    then: tuple[Step, ...]
    otherwise: tuple[Step, ...]


@dataclass(frozen=True)
class ForEach(Step):
    over: Any
    as_: str
    do: tuple[Step, ...]


@dataclass(frozen=True)
class Wait(Step):
    duration: Any  # timedelta | ISO-8601 duration | datetime | function of ctx
    suspends = True


@dataclass(frozen=True)
class WaitForEvent(Step):
    event: str  # a key of the workflow's `awaits`
    match: Any  # node | persisted expression | function of ctx | None
    timeout: Any
    suspends = True


@dataclass(frozen=True)
class Retry(Step):
    times: int
    backoff: Literal["linear", "exponential"]
    do: tuple[Step, ...]
    base_delay: timedelta = timedelta(seconds=10)
    suspends = True

    def delay(self, failed_attempt: int) -> timedelta:
        if self.backoff == "linear":
            return self.base_delay * failed_attempt
        return self.base_delay * (2 ** (failed_attempt - 1))


@dataclass(frozen=True)
class RunWorkflow(Step):
    """Start a child run of `workflow` with `input`; with `wait`, suspend
    until it settles and take its return value (its failure raises here)."""

    workflow: str
    input: Any  # value or function of ctx
    wait: bool = True
    suspends = True
    uses_db = True


@dataclass(frozen=True)
class SendMail(Step):
    to: Any
    subject: Any
    body: Any
    uses_db = True  # recorded in the mail outbox with the step's progress


@dataclass(frozen=True)
class SendWebhook(Step):
    url: Any
    method: str
    headers: Any
    body: Any
    auth: Mapping[str, str] | None
    retry: int
    retry_delay: float
    timeout: float


@dataclass(frozen=True)
class AppendEvent(Step):
    aggregate_type: Any
    aggregate_id: Any
    event_type: str
    payload: Any
    uses_db = True


@dataclass(frozen=True)
class Call(Step):
    handler: str
    payload: Any
    uses_db = True


# -- the workflow ---------------------------------------------------------------


@dataclass(frozen=True)
class Workflow:
    name: str
    trigger: Trigger
    steps: tuple[Step, ...]
    awaits: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | Callable[[Event], str | None] | None = None
    on_duplicate: Literal["ignore", "new-run"] = "ignore"
    # Versions side by side: runs finish on the version they started with; new
    # triggers start the highest version with `start` (False: "finish only").
    # Neither is part of the fingerprint: marking a version finish-only, or
    # numbering a first one, changes nothing for its runs.
    version: int = 1
    start: bool = True
    # Flow control (`controls`); not in the fingerprint either: a limit can
    # change under runs in flight.
    concurrency: Limit | None = None
    priority: Callable[[Event], int] | None = None
    timeout: timedelta | None = None  # an open run past it fails: deadline_exceeded
    cancel_on: tuple[CancelOn, ...] = ()
    # Cron policies: a tick while the previous run is open (skip, buffer_one,
    # allow) and the window of missed ticks fired after downtime (None: none).
    overlap: Overlap = "allow"
    catchup: timedelta | None = None
    throttle: Rate | None = None  # the excess waits for the window
    rate_limit: Rate | None = None  # the excess is skipped
    debounce: Quiet | None = None  # the last trigger of a quiet period starts
    batch: Batch | None = None  # one run for up to `max` events of a key
    singleton: Singleton | None = None  # at most one open run per key

    @cached_property
    def rates(self) -> Rates:
        """Throttle, rate limit and debounce together (falsy: none declared)."""
        return Rates(self.throttle, self.rate_limit, self.debounce)

    @cached_property
    def fingerprint(self) -> str:
        return fingerprint(self)

    @cached_property
    def shape(self) -> dict[str, Any]:
        """What the deploy check and the compatibility rule compare (`compat`)."""
        return shape(self)

    @cached_property
    def spawns(self) -> frozenset[str]:
        """The workflows its top-level steps start as children."""
        return frozenset(c.workflow for s in self.steps if (c := child_step(s)) is not None)

    @cached_property
    def slot_limit(self) -> Limit | None:
        """The limit the store enforces: the declared one, else one run at a
        time for a cron workflow whose overlap is skip or buffer_one."""
        if self.concurrency is not None:
            return self.concurrency
        if isinstance(self.trigger, CronTrigger) and self.overlap != "allow":
            return ONE_RUN
        return None

    def key_for(self, event: Event) -> str | None:
        if self.idempotency_key is None:
            return None
        if isinstance(self.idempotency_key, str):
            return self.idempotency_key
        key = self.idempotency_key(event)
        return None if key is None else str(key)


def child_step(step: Step) -> RunWorkflow | None:
    """The `run_workflow` a top-level step starts: itself, or the only step
    inside a `retry`; None for any other step."""
    if isinstance(step, RunWorkflow):
        return step
    if isinstance(step, Retry) and len(step.do) == 1 and isinstance(step.do[0], RunWorkflow):
        return step.do[0]
    return None
