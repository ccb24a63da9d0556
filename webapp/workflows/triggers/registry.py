"""Registering a workflow: add it to the catalog and mount its trigger and
wake-up projections (or its cron job, `cron`). The lookups live in `catalog`."""

from __future__ import annotations

import dataclasses
from typing import Any

from webapp.workflows.definition import catalog
from webapp.workflows.definition.catalog import (
    WriteHandler,
    by_webhook_path,
    get,
    get_handler,
    register_handler,
    registered,
)
from webapp.workflows.definition.model import Workflow
from webapp.workflows.triggers import cron
from webapp.workflows.triggers import start as trigger
from webapp.workflows.triggers import wakeups as wakeup

__all__ = [
    "WriteHandler",
    "by_webhook_path",
    "get",
    "get_handler",
    "register",
    "register_handler",
    "registered",
    "unmount",
    "unregister",
]


# What is mounted per workflow name: the starting version's trigger, and one
# wake-up net over the awaits of every version.
_mounted: dict[str, list[Workflow]] = {}


def register(app_or_wf: Any, wf: Workflow | None = None) -> Workflow:
    """Register a workflow version: `register(wf)` or `register(app, wf)`.

    Versions of one name live side by side: the highest with `start=True`
    gets the trigger, every version resumes its own runs. Registering the
    same name and version again replaces it. Mounting an event-triggered
    workflow starts its trigger projection at the current head of the log:
    history is never replayed.
    """
    target = wf if wf is not None else app_or_wf
    if not isinstance(target, Workflow):
        raise TypeError(
            "register() needs a Workflow (from webapp.workflows.definition.builders.workflow)"
        )
    catalog.put(target)
    _remount(target.name)
    return target


def unregister(name: str, version: int | None = None) -> None:
    """Remove a workflow's version (all versions when none is given)."""
    catalog.pop(name, version)
    _remount(name)


def _remount(name: str) -> None:
    for wf in _mounted.pop(name, []):
        unmount(wf)
    versions = catalog.versions(name)
    starting = catalog.get(name)
    if starting is not None:
        trigger.mount(starting)
        cron.mount(starting)
    if versions:
        awaits = {f"{w.version}.{k}": t for w in versions for k, t in w.awaits.items()}
        wakeup.mount(dataclasses.replace(versions[-1], awaits=awaits))
        _mounted[name] = [starting or versions[-1]]


def unmount(wf: Workflow) -> None:
    trigger.unmount(wf)
    cron.unmount(wf)
    wakeup.unmount(wf)
