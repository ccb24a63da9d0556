"""Registered workflows and the write handlers a `call` step may invoke."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

if TYPE_CHECKING:
    from flask import Flask

    from webapp.workflows.api import Workflow
    from webapp.workflows.engine import RunContext

# A write handler gets the step's transaction, the run context and the payload;
# what it returns is the step's result.
WriteHandler = Callable[[Connection, "RunContext", Any], Any]

_workflows: dict[str, Workflow] = {}
_handlers: dict[str, WriteHandler] = {}


def register(app_or_wf: Flask | Workflow | None, wf: Workflow | None = None) -> Workflow:
    """Register a workflow: `register(wf)` or `register(app, wf)`.

    Mounting an event-triggered workflow starts its trigger projection at the
    current head of the log: history is never replayed.
    """
    from webapp.workflows.api import Workflow as _Workflow

    target = wf if wf is not None else app_or_wf
    if not isinstance(target, _Workflow):
        raise TypeError("register() needs a Workflow (from webapp.workflows.api.workflow)")
    from webapp.workflows import trigger, wakeup

    previous = _workflows.get(target.name)
    if previous is not None and previous is not target:
        unmount(previous)
    _workflows[target.name] = target
    trigger.mount(target)
    wakeup.mount(target)
    return target


def unregister(name: str) -> None:
    wf = _workflows.pop(name, None)
    if wf is not None:
        unmount(wf)


def unmount(wf: Workflow) -> None:
    from webapp.workflows import trigger, wakeup

    trigger.unmount(wf)
    wakeup.unmount(wf)


def get(name: str) -> Workflow | None:
    return _workflows.get(name)


def registered() -> list[Workflow]:
    return list(_workflows.values())


def by_webhook_path(path: str) -> Workflow | None:
    for wf in _workflows.values():
        if wf.trigger.kind == "webhook" and wf.trigger.path == path.strip("/"):
            return wf
    return None


def register_handler(name: str, handler: WriteHandler) -> None:
    _handlers[name] = handler


def get_handler(name: str) -> WriteHandler:
    try:
        return _handlers[name]
    except KeyError:
        raise LookupError(f"no write handler named {name!r}") from None
