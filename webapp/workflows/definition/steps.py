"""The step builders of the public API (`builders` re-exports them):
compute, ret, branch, for_each, wait, wait_for_event, retry, send_mail,
send_webhook, append_event, call. Each returns a frozen step of
`definition.model`; `run_workflow` lives with the child workflows
(`definition.children`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from webapp.workflows.definition.model import (
    AppendEvent,
    Branch,
    Call,
    Compute,
    DefinitionError,
    ForEach,
    Retry,
    Return,
    RunContext,
    SendMail,
    SendWebhook,
    Step,
    Wait,
    WaitForEvent,
)

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
