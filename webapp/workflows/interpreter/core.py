"""The step interpreter's core: a registry of step runners by step kind, and
the steps that only shape the run (compute, return, branch, for_each).

Each step kind with an effect has a small module in this package that
registers its runner with `runs(kind)`. A runner gets the step, the run context and the step's
transaction (`conn`, present whenever the step or one inside it writes to the
database) and returns the step's result.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from webapp.tracing import hooks
from webapp.workflows import host
from webapp.workflows.definition.model import (
    Branch,
    Compute,
    ForEach,
    Retry,
    Return,
    RunContext,
    Step,
)

Runner = Callable[[Any, RunContext, Connection | None], Any]
_runners: dict[type[Step], Runner] = {}
# Each kind's step-duration label (`SendMail` -> `send_mail`); the histogram's
# child is made at the first step run, so a process that runs none (a CLI
# command) writes no metrics file.
_kinds: dict[type[Step], str] = {}


class ReturnSignal(Exception):
    """A `return` step ended the run with `value`."""

    def __init__(self, value: Any) -> None:
        self.value = value


def runs(kind: type[Step]) -> Callable[[Runner], Runner]:
    """Register the runner of a step kind."""

    def deco(fn: Runner) -> Runner:
        _runners[kind] = fn
        _kinds[kind] = re.sub(r"(?<!^)(?=[A-Z])", "_", kind.__name__).lower()
        return fn

    return deco


def resolve(value: Any, ctx: RunContext) -> Any:
    """A "value or function" parameter: call it with the context when it is a function."""
    return value(ctx) if callable(value) and not isinstance(value, type) else value


def json_safe(value: Any, step_name: str) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise TypeError(f"result of step {step_name!r} is not JSON-serialisable") from None
    return value


def run_step(step: Step, ctx: RunContext, conn: Connection | None = None) -> Any:
    runner = _runners.get(type(step))
    if runner is None:
        raise TypeError(f"step {step.name!r} ({type(step).__name__}) cannot run here")
    started = time.perf_counter()
    try:
        if hooks.step_span is None:
            return runner(step, ctx, conn)
        with hooks.step_span(_kinds[type(step)], step.name, ctx):
            return runner(step, ctx, conn)
    finally:
        host.hooks.on_step(_kinds[type(step)], time.perf_counter() - started)


def run_steps(steps: tuple[Step, ...], ctx: RunContext, conn: Connection | None = None) -> Any:
    """Run inner (non-suspending) steps in order; the last result is returned."""
    result = None
    for s in steps:
        result = run_step(s, ctx, conn)
        ctx.results[s.name] = json_safe(result, s.name)
    return result


def children(step: Step) -> tuple[Step, ...]:
    if isinstance(step, Branch):
        return (*step.then, *step.otherwise)
    if isinstance(step, ForEach | Retry):
        return step.do
    return ()


def needs_transaction(step: Step) -> bool:
    """The step, or one inside it, writes to the database (append_event, call):
    it runs inside the transaction that commits its progress (exactly once)."""
    return step.uses_db or any(needs_transaction(s) for s in children(step))


def is_pure(step: Step) -> bool:
    """No effect outside the run: compute, return, and branch / for-each of those."""
    if isinstance(step, Compute | Return):
        return True
    if isinstance(step, Branch | ForEach):
        return all(is_pure(s) for s in children(step))
    return False


# -- compute, return, branch, for_each: steps that only shape the run ------------


@runs(Compute)
def compute(step: Compute, ctx: RunContext, conn: Connection | None) -> Any:
    return step.fn(ctx)


@runs(Return)
def return_(step: Return, ctx: RunContext, conn: Connection | None) -> Any:
    raise ReturnSignal(json_safe(resolve(step.value, ctx), step.name))


@runs(Branch)
def branch(step: Branch, ctx: RunContext, conn: Connection | None) -> Any:
    chosen = step.then if resolve(step.condition, ctx) else step.otherwise
    return run_steps(chosen, ctx, conn)


@runs(ForEach)
def for_each(step: ForEach, ctx: RunContext, conn: Connection | None) -> Any:
    items = list(resolve(step.over, ctx) or [])
    out = []
    try:
        for item in items:
            ctx.results[step.as_] = json_safe(item, step.as_)
            out.append(run_steps(step.do, ctx, conn))
    finally:
        ctx.results.pop(step.as_, None)
    return out
