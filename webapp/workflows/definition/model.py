"""What a workflow definition is made of: triggers, steps, the workflow.

Plain frozen dataclasses; `webapp.workflows.definition.builders` builds and validates them, the
interpreter (`webapp.workflows.interpreter`) runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Any, Literal

from webapp.eventstore.records import Event
from webapp.workflows.definition.context import RunContext
from webapp.workflows.definition.controls import ONE_RUN, CancelOn, Limit, Overlap
from webapp.workflows.definition.errors import DefinitionError as DefinitionError  # re-exported
from webapp.workflows.definition.fingerprint import fingerprint, shape
from webapp.workflows.definition.rates import Quiet, Rate, Rates

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

    @property
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
