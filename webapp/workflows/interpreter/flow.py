"""compute, return, branch, for_each: steps that only shape the run."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.workflows.definition.context import RunContext
from webapp.workflows.definition.model import Branch, Compute, ForEach, Return
from webapp.workflows.interpreter.core import (
    ReturnSignal,
    json_safe,
    resolve,
    run_steps,
    runs,
)


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
