"""append_event and call: database writes in the step's own transaction, which
also commits the run's progress, so each happens exactly once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.eventstore import (
    ANY,
    MAX_AGGREGATE_ID,
    MAX_AGGREGATE_TYPE,
    Metadata,
    NewEvent,
    StreamId,
    append,
)
from webapp.workflows.definition import catalog
from webapp.workflows.definition.model import AppendEvent, Call, RunContext
from webapp.workflows.interpreter.core import resolve, runs


class NoTransaction(RuntimeError):
    """A database step ran outside the transaction that records its progress."""


def _needs(conn: Connection | None, name: str) -> Connection:
    if conn is None:
        raise NoTransaction(
            f"step {name!r} writes to the database and needs the step's transaction"
        )
    return conn


def _stream_name(step: str, what: str, value: object, limit: int) -> str:
    """A computed aggregate type or id, refused alike on both backends when
    its column cannot hold it (SQLite would store it, PostgreSQL refuse it)."""
    name = str(value)
    if not name or len(name) > limit:
        raise ValueError(f"step {step!r}: the {what} must be 1 to {limit} characters")
    return name


@runs(AppendEvent)
def append_event(step: AppendEvent, ctx: RunContext, conn: Connection | None) -> Any:
    payload = resolve(step.payload, ctx) or {}
    e = append(
        _needs(conn, step.name),
        StreamId(
            ctx.tenant_id,
            _stream_name(
                step.name, "aggregate type", resolve(step.aggregate_type, ctx), MAX_AGGREGATE_TYPE
            ),
            _stream_name(
                step.name, "aggregate id", resolve(step.aggregate_id, ctx), MAX_AGGREGATE_ID
            ),
        ),
        [NewEvent(step.event_type, payload)],
        ANY,
        Metadata(actor=f"workflow:{ctx.workflow_name}", correlation_id=ctx.run_id),
    )[0]
    return e.ref


@runs(Call)
def call(step: Call, ctx: RunContext, conn: Connection | None) -> Any:
    handler = catalog.get_handler(step.handler)
    return handler(_needs(conn, step.name), ctx, resolve(step.payload, ctx))
