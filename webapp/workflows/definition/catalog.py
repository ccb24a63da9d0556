"""The definitions this process knows: workflows by name, write handlers by name.

Only the lookup tables; `webapp.workflows.triggers.registry.register` adds a workflow
here and mounts its triggers and wake-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from webapp.workflows.definition.context import RunContext
from webapp.workflows.definition.model import Workflow

if TYPE_CHECKING:  # a type only: the definition layer imports no database code
    from sqlalchemy import Connection

# A write handler gets the step's transaction, the run context and the payload;
# what it returns is the step's result.
WriteHandler = Callable[["Connection", RunContext, Any], Any]

_workflows: dict[str, Workflow] = {}
_handlers: dict[str, WriteHandler] = {}


def put(wf: Workflow) -> Workflow | None:
    """Add (or replace) a workflow; returns the one it replaced."""
    previous = _workflows.get(wf.name)
    _workflows[wf.name] = wf
    return previous


def pop(name: str) -> Workflow | None:
    return _workflows.pop(name, None)


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
