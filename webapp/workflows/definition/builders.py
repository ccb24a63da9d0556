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
from typing import Literal

from croniter import croniter

from webapp.eventstore.records import Event
from webapp.workflows.definition import controls
from webapp.workflows.definition import rates as rate_controls
from webapp.workflows.definition.batches import Batch, batching, collect
from webapp.workflows.definition.children import run_workflow
from webapp.workflows.definition.controls import CancelOn, Limit, cron_policies, limit, on
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
    RunContext,
    SendMail,
    SendWebhook,
    Step,
    Trigger,
    Wait,
    WaitForEvent,
    WebhookTrigger,
    Workflow,
    child_step,
)
from webapp.workflows.definition.rates import quiet, rate
from webapp.workflows.definition.singletons import Singleton, one, singleton_of
from webapp.workflows.definition.steps import (
    append_event,
    branch,
    call,
    compute,
    for_each,
    ret,
    retry,
    return_,
    send_mail,
    send_webhook,
    wait,
    wait_for_event,
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
    "collect",
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
    "one",
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
    throttle: rate_controls.Rate | None = None,
    rate_limit: rate_controls.Rate | None = None,
    debounce: rate_controls.Quiet | None = None,
    batch: Batch | None = None,
    singleton: Singleton | None = None,
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

    `batch=collect(max, within=..., key=...)` starts one run for up to `max`
    events of a key, collected for at most `within` (`ctx.trigger_batch`);
    `singleton=one(key=..., mode="skip"|"replace")` keeps at most one open
    run per key.

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
    rates = rate_controls.rates(
        name, throttle, rate_limit, debounce, concurrency, cron is not None, child
    )
    others = dict(
        cron=cron is not None,
        child=child,
        key=key,
        debounce=debounce,
        throttle=throttle,
        rate_limit=rate_limit,
        concurrency=concurrency,
    )
    batch = batching(name, batch, singleton=singleton, **others)
    singleton = singleton_of(name, singleton, **others)
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
        batch,
        singleton,
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
