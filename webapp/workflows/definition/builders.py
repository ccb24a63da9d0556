"""The public API: define a workflow and its steps.

    from webapp.workflows.definition import builders as wf

    from webapp.workflows.definition import match

    verify = wf.workflow(
        "send-welcome",
        on="user.registered",
        key=lambda event: event.payload["userId"],
        awaits={"verified": "user.email-verified"},
        steps=[
            wf.send_mail("mail", to=lambda ctx: ctx.trigger.payload["email"], subject="Hi", body="..."),
            wf.wait_for_event("verified", event="verified", timeout="P1D",
                              match=lambda ctx: match.eq("userId", ctx.trigger.payload["userId"])),
            wf.ret(lambda ctx: ctx["verified"] is not None),
        ],
    )
    register(verify)

Every parameter documented as "value or function" takes either a plain value or
a function of the run context (`RunContext`), evaluated when the step runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from croniter import croniter

from webapp.eventstore.records import Event
from webapp.workflows.definition import controls
from webapp.workflows.definition.children import child_step, run_workflow
from webapp.workflows.definition.context import RunContext
from webapp.workflows.definition.controls import (
    CancelOn,
    Limit,
    cron_policies,
    limit,
    on,
    quiet,
    rate,
)
from webapp.workflows.definition.durations import parse_duration, to_instant
from webapp.workflows.definition.fingerprint import describe, sha256_json
from webapp.workflows.definition.model import (
    AppendEvent,
    Branch,
    Call,
    ChildTrigger,
    Compute,
    CronTrigger,
    DefinitionError,
    EventTrigger,
    ForEach,
    Retry,
    Return,
    SendMail,
    SendWebhook,
    Step,
    Trigger,
    Wait,
    WaitForEvent,
    WebhookTrigger,
    Workflow,
)

__all__ = [
    "AppendEvent",
    "Branch",
    "Call",
    "Compute",
    "CronTrigger",
    "DefinitionError",
    "EventTrigger",
    "ForEach",
    "Retry",
    "Return",
    "RunContext",
    "SendMail",
    "SendWebhook",
    "Step",
    "Trigger",
    "Wait",
    "WaitForEvent",
    "WebhookTrigger",
    "Workflow",
    "append_event",
    "branch",
    "call",
    "compute",
    "describe",
    "for_each",
    "parse_duration",
    "ret",
    "retry",
    "return_",
    "run_workflow",
    "limit",
    "on",
    "quiet",
    "rate",
    "send_mail",
    "send_webhook",
    "sha256_json",
    "to_instant",
    "wait",
    "wait_for_event",
    "workflow",
]


_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")


def workflow(
    name: str,
    *,
    steps: Sequence[Step],
    on: str | None = None,
    filter: Callable[[Event], bool] | None = None,
    cron: str | None = None,
    webhook: str | None = None,
    secret: str | None = None,
    tenant_id: str = "default",
    awaits: Mapping[str, str] | None = None,
    key: str | Callable[[Event], str | None] | None = None,
    on_duplicate: Literal["ignore", "new-run"] = "ignore",
    version: int = 1,
    start: bool = True,
    concurrency: Limit | None = None,
    priority: Callable[[Event], int] | None = None,
    timeout: str | timedelta | None = None,
    cancel_on: Sequence[CancelOn] | None = None,
    child: bool = False,
    overlap: Literal["skip", "buffer_one", "allow"] | None = None,
    catchup: str | timedelta | None = None,
    throttle: controls.Rate | None = None,
    rate_limit: controls.Rate | None = None,
    debounce: controls.Quiet | None = None,
) -> Workflow:
    """Define a workflow. Exactly one of `on` (event type), `cron` or `webhook`.

    `concurrency=limit(max, key=...)` caps the runs holding a slot at once
    (per key); a run over the limit is queued, and queued runs start by
    `priority` (a function of the trigger event: 1 to 5, 5 first), then oldest.

    `timeout` (an ISO-8601 duration) fails a run still open that long after
    its trigger (reason deadline_exceeded); `cancel_on=[on(type, match=...)]`
    cancels an open run when a matching event comes (cancelled_by_event).
    A cron workflow's `overlap` decides a tick that arrives while its previous
    run is open: "skip" (default), "buffer_one" or "allow"; `catchup="PT1H"`
    fires the ticks missed in the last hour after downtime.

    `throttle=rate(n, per=..., key=...)` queues starts beyond n per window,
    `rate_limit=rate(...)` skips them (workflow.run-skipped), and
    `debounce=quiet(period, key=..., max_wait=...)` starts one run with the
    last trigger of a quiet period.

    `version` (an integer >= 1) lets several versions run side by side: a run
    finishes on the version it started with, new triggers start the highest
    version registered with `start=True` (`start=False`: finish only).

    `secret` names the webhook's HMAC secret in config.secrets (env
    SECRET_<NAME>); it defaults to the path with non-alphanumerics as `_`.
    """
    if not _NAME.match(name):
        raise DefinitionError(f"workflow name {name!r}: lower-case letters, digits, . _ - only")
    if sum(x is not None for x in (on, cron, webhook)) + bool(child) != 1:
        raise DefinitionError(
            f"workflow {name!r}: give exactly one trigger: on=, cron= or webhook= "
            "(or child=True: started only by a parent's run_workflow step)"
        )
    trigger: Trigger
    if child:
        trigger = ChildTrigger()
    elif on is not None:
        trigger = EventTrigger(on, filter)
    elif cron is not None:
        if not croniter.is_valid(cron):
            raise DefinitionError(f"workflow {name!r}: invalid cron schedule {cron!r}")
        trigger = CronTrigger(cron)
    else:
        assert webhook is not None
        path = webhook.strip("/")
        if not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", path):
            raise DefinitionError(f"workflow {name!r}: invalid webhook path {webhook!r}")
        trigger = WebhookTrigger(path, secret or re.sub(r"[^a-z0-9]", "_", path.lower()), tenant_id)
    if filter is not None and on is None:
        raise DefinitionError(f"workflow {name!r}: filter= only applies to event triggers")
    if on_duplicate not in ("ignore", "new-run"):
        raise DefinitionError(f"workflow {name!r}: on_duplicate must be 'ignore' or 'new-run'")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise DefinitionError(
            f"workflow {name!r}: version must be an integer >= 1, got {version!r}"
        )
    if not isinstance(start, bool):
        raise DefinitionError(f"workflow {name!r}: start must be True or False, got {start!r}")
    if concurrency is not None and not isinstance(concurrency, Limit):
        raise DefinitionError(f"workflow {name!r}: concurrency= takes limit(max=..., key=...)")
    if priority is not None and not callable(priority):
        raise DefinitionError(f"workflow {name!r}: priority= takes a function of the event")
    overlap_, window = cron_policies(name, cron is not None, overlap, catchup, concurrency)
    rates = controls.rates(
        name, throttle, rate_limit, debounce, concurrency, cron is not None, child
    )
    wf = Workflow(
        name,
        trigger,
        tuple(steps),
        dict(awaits or {}),
        key,
        on_duplicate,
        version,
        start,
        concurrency,
        priority,
        controls.deadline(name, timeout),
        controls.cancel_events(name, cancel_on),
        overlap_,
        window,
        rates.throttle,
        rates.rate_limit,
        rates.debounce,
    )
    _validate(wf)
    return wf


def _validate(wf: Workflow) -> None:
    if not wf.steps:
        raise DefinitionError(f"workflow {wf.name!r} has no steps")
    seen: set[str] = set()

    def walk(steps: Sequence[Step], top: bool, around_child: bool = False) -> None:
        for s in steps:
            if not isinstance(s, Step):
                raise DefinitionError(f"workflow {wf.name!r}: {s!r} is not a step")
            if s.name in seen:
                raise DefinitionError(f"workflow {wf.name!r}: step name {s.name!r} used twice")
            seen.add(s.name)
            if s.suspends and not top and not around_child:
                raise DefinitionError(
                    f"workflow {wf.name!r}: {type(s).__name__.lower()} step {s.name!r} must be a "
                    "top-level step (only top-level steps can suspend the run)"
                )
            if isinstance(s, WaitForEvent) and s.event not in wf.awaits:
                raise DefinitionError(
                    f"workflow {wf.name!r}: step {s.name!r} waits for {s.event!r}, "
                    f"which is not a key of awaits ({', '.join(sorted(wf.awaits)) or 'none'})"
                )
            if isinstance(s, Retry):  # a retry around one run_workflow may suspend with it
                walk(s.do, False, top and child_step(s) is not None)
            elif isinstance(s, Branch):
                walk(s.then, False)
                walk(s.otherwise, False)
            elif isinstance(s, ForEach):
                if s.as_ in seen:
                    raise DefinitionError(f"workflow {wf.name!r}: for_each name {s.as_!r} clashes")
                walk(s.do, False)

    walk(wf.steps, True)


# -- step builders ----------------------------------------------------------------

_counter = 0


def _auto(kind: str) -> str:
    global _counter
    _counter += 1
    return f"{kind}-{_counter}"


def compute(name: str, fn: Callable[[RunContext], Any]) -> Compute:
    """Run `fn(ctx)`; its (JSON-serialisable) result is kept under `name`."""
    return Compute(name, fn)


def ret(value: Any = None, name: str = "return") -> Return:
    """End the run with `value` (value or function) as its result."""
    return Return(name, value)


return_ = ret


def branch(
    name: str,
    if_: Any,
    then: Sequence[Step],
    else_: Sequence[Step] = (),
) -> Branch:
    """Run `then` when `if_` (value or function) is truthy, else `else_`."""
    return Branch(name, if_, tuple(then), tuple(else_))


def for_each(name: str, over: Any, as_: str, do: Sequence[Step]) -> ForEach:
    """Run `do` once per item of `over` in order; the item is `ctx[as_]`.
    The step's result is the list of the last inner result per item."""
    return ForEach(name, over, as_, tuple(do))


def wait(name: str, duration: Any) -> Wait:
    """Suspend for an ISO-8601 duration (`PT10M`), a timedelta, seconds, or
    until an absolute (timezone-aware) datetime; value or function."""
    return Wait(name, duration)


def wait_for_event(name: str, event: str, timeout: Any, match: Any = None) -> WaitForEvent:
    """Suspend until an event of type `awaits[event]` whose payload satisfies
    `match` (a node from `webapp.workflows.definition.match`, or a function of the run
    context building one), or until `timeout`. Result: the event's payload,
    or None on timeout."""
    return WaitForEvent(name, event, match, timeout)


def retry(
    name: str,
    times: int,
    do: Sequence[Step],
    backoff: Literal["linear", "exponential"] = "exponential",
    base_delay: timedelta | float = 10,
) -> Retry:
    """Run `do`; on an error with attempts left (at most `times` in all) suspend
    for the backoff and try again. When attempts run out the error fails the run."""
    if times < 1:
        raise DefinitionError(f"retry {name!r}: times must be at least 1")
    if backoff not in ("linear", "exponential"):
        raise DefinitionError(f"retry {name!r}: backoff must be 'linear' or 'exponential'")
    delay = base_delay if isinstance(base_delay, timedelta) else timedelta(seconds=base_delay)
    return Retry(name, times, backoff, tuple(do), delay)


def send_mail(name: str, to: Any, subject: Any, body: Any) -> SendMail:
    """Send a mail through `webapp.mail.send` (each field value or function)."""
    return SendMail(name, to, subject, body)


def send_webhook(
    name: str,
    url: Any,
    method: str = "POST",
    headers: Any = None,
    body: Any = None,
    auth: Mapping[str, str] | None = None,
    retry: int = 3,
    retry_delay: float = 1.0,
    timeout: float = 10.0,
) -> SendWebhook:
    """Send an HTTP request with a JSON body. `auth` is {"bearer": SECRET_NAME}
    or {"header": "X-Api-Key", "secret": SECRET_NAME}; secrets come from
    config.secrets. Network errors and 5xx are retried `retry` times in place;
    the result is {"status": code, "body": parsed JSON or text}."""
    if auth is not None and not ("bearer" in auth or ("header" in auth and "secret" in auth)):
        raise DefinitionError(
            f"send_webhook {name!r}: auth is {{'bearer': NAME}} or {{'header': H, 'secret': NAME}}"
        )
    return SendWebhook(name, url, method.upper(), headers, body, auth, retry, retry_delay, timeout)


def append_event(
    name: str, aggregate_type: Any, aggregate_id: Any, event_type: str, payload: Any = None
) -> AppendEvent:
    """Append one event to any aggregate (at its end), atomically with the step's progress."""
    return AppendEvent(name, aggregate_type, aggregate_id, event_type, payload)


def call(name: str, handler: str, payload: Any = None) -> Call:
    """Call a registered write handler (`registry.register_handler`) in one
    transaction with the step's progress; its return value is the result."""
    return Call(name, handler, payload)
