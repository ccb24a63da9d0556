"""Registering a workflow: add it to the catalog and mount its trigger and
wake-up projections (or cron job). The lookups live in `catalog`."""

from __future__ import annotations

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


def register(app_or_wf: Any, wf: Workflow | None = None) -> Workflow:
    """Register a workflow: `register(wf)` or `register(app, wf)`.

    Mounting an event-triggered workflow starts its trigger projection at the
    current head of the log: history is never replayed.
    """
    target = wf if wf is not None else app_or_wf
    if not isinstance(target, Workflow):
        raise TypeError(
            "register() needs a Workflow (from webapp.workflows.definition.builders.workflow)"
        )
    previous = catalog.put(target)
    if previous is not None and previous is not target:
        unmount(previous)
    trigger.mount(target)
    wakeup.mount(target)
    return target


def unregister(name: str) -> None:
    wf = catalog.pop(name)
    if wf is not None:
        unmount(wf)


def unmount(wf: Workflow) -> None:
    trigger.unmount(wf)
    wakeup.unmount(wf)
