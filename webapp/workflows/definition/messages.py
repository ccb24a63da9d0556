"""Talking to a running run, as the workflow language declares it: a step
that waits for a named signal (`wait_for_signal`), a step that waits for a
named update and answers it through its handler (`wait_for_update`), and
named state a client reads (`set_state`, or `ctx.set_state` in a step).

Pure: the steps are frozen dataclasses; the store (`store.messages`) keeps
the messages, the run loop (`engine.suspensions`) runs the waits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webapp.workflows.definition.model import Compute, DefinitionError, RunContext, Step

MAX_NAME = 200


class Rejected(Exception):  # noqa: N818 - the handler's verdict, read as a word
    """Raised by an update handler: the update is rejected with `reason`
    (returned to its caller); the run keeps waiting."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class WaitForSignal(Step):
    """Take the oldest signal `signal` not yet taken (sent before or while it
    waits); its payload is the step's result, None on timeout."""

    signal: str
    timeout: Any  # ISO-8601 duration | timedelta | seconds | datetime | function | None
    suspends = True


# An update handler: (the run's results so far, the update's payload) -> the
# answer's value; raising `Rejected` rejects the update.
UpdateHandler = Callable[[Mapping[str, Any], Any], Any]


@dataclass(frozen=True)
class WaitForUpdate(Step):
    """Wait for update `update`: each one is judged by `handler`; the first
    accepted ends the wait with the handler's value as the step's result,
    a rejected one leaves the run waiting. None on timeout."""

    update: str
    handler: UpdateHandler
    timeout: Any
    suspends = True


def _name(kind: str, step: str, name: str) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise DefinitionError(
            f"{kind} {step!r}: the name must be text of 1 to {MAX_NAME} characters"
        )
    return name


def wait_for_signal(name: str, timeout: Any = None, signal: str | None = None) -> WaitForSignal:
    """Suspend until signal `signal` (default: the step's name) comes, or
    `timeout` passes (None: no timeout). Signals sent before the wait are kept
    in order: the wait takes the oldest one not taken yet, at once."""
    return WaitForSignal(name, _name("wait_for_signal", name, signal or name), timeout)


def wait_for_update(
    name: str, handler: UpdateHandler, timeout: Any = None, update: str | None = None
) -> WaitForUpdate:
    """Suspend until an update `update` (default: the step's name) is
    accepted by `handler(results, payload)` (a pure function: its return value
    is the answer and the step's result; `raise Rejected(reason)` rejects), or
    `timeout` passes (result None)."""
    if not callable(handler):
        raise DefinitionError(f"wait_for_update {name!r}: handler must be a function")
    return WaitForUpdate(name, _name("wait_for_update", name, update or name), handler, timeout)


def set_state(name: str, key: str, value: Any) -> Compute:
    """A step that sets the run's named state `key` to `value` (value or
    function of the run context): what `wf.state(run_id)` reads. Its result
    is the value."""
    _name("set_state", name, key)
    # A partial, not a closure: the fingerprint describes its key and value.
    return Compute(name, functools.partial(_set_state, key, value))


def _set_state(key: str, value: Any, ctx: RunContext) -> Any:
    v = value(ctx) if callable(value) and not isinstance(value, type) else value
    ctx.set_state(key, v)
    return v
