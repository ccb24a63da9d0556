"""The definitions this process knows: workflows by name, write handlers by name.

Only the lookup tables; `webapp.workflows.triggers.registry.register` adds a workflow
here and mounts its triggers and wake-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from webapp.workflows.definition.model import RunContext, Workflow

if TYPE_CHECKING:  # a type only: the definition layer imports no database code
    from sqlalchemy import Connection

# A write handler gets the step's transaction, the run context and the payload;
# what it returns is the step's result.
WriteHandler = Callable[["Connection", RunContext, Any], Any]

# name -> version -> definition: versions side by side (runs finish on theirs).
_workflows: dict[str, dict[int, Workflow]] = {}
_handlers: dict[str, WriteHandler] = {}


def put(wf: Workflow) -> Workflow | None:
    """Add (or replace) a workflow version; returns the one it replaced."""
    versions = _workflows.setdefault(wf.name, {})
    previous = versions.get(wf.version)
    versions[wf.version] = wf
    return previous


def pop(name: str, version: int | None = None) -> list[Workflow]:
    """Remove one version of a workflow, or all of them; returns what went."""
    versions = _workflows.get(name, {})
    if version is None:
        gone = list(versions.values())
        versions.clear()
    else:
        gone = [versions.pop(version)] if version in versions else []
    if not versions:
        _workflows.pop(name, None)
    return gone


def get(name: str, version: int | None = None) -> Workflow | None:
    """A version of a workflow, or (no version) the one new triggers start:
    the highest registered with `start=True`."""
    versions = _workflows.get(name, {})
    if version is not None:
        return versions.get(version)
    starting = [v for v, wf in versions.items() if wf.start]
    return versions[max(starting)] if starting else None


def versions(name: str) -> list[Workflow]:
    """Every registered version of a workflow, lowest first."""
    return [wf for _, wf in sorted(_workflows.get(name, {}).items())]


def registered() -> list[Workflow]:
    """Every registered workflow version."""
    return [wf for name in _workflows for wf in versions(name)]


def families() -> tuple[set[str], set[str]]:
    """(the workflows some registered workflow starts as children, the
    workflows that start children)."""
    every = registered()
    return set().union(*(w.spawns for w in every)), {w.name for w in every if w.spawns}


def by_webhook_path(path: str) -> Workflow | None:
    for name in _workflows:
        wf = get(name)
        if wf is not None and wf.trigger.kind == "webhook" and wf.trigger.path == path.strip("/"):
            return wf
    return None


def register_handler(name: str, handler: WriteHandler) -> None:
    _handlers[name] = handler


def get_handler(name: str) -> WriteHandler:
    try:
        return _handlers[name]
    except KeyError:
        raise LookupError(f"no write handler named {name!r}") from None
