"""Publishing a domain event from application code (see docs/workflows.md).

    from webapp.publish import publish

    publish("order.paid", "order", order_id, {"orderId": order_id, "amount": 1200})

The event is appended to the stream `aggregate_type/aggregate_id` of `tenant`.
Inside an open `db.transaction()` it joins that transaction (it commits or
rolls back with your other writes); otherwise it commits in a transaction of
its own. Either way, once the transaction has committed, one projection
dispatch is queued, so workflow triggers and wake-ups see the event within
moments (and the scheduler's dispatch
sweep catches up if Redis was down). Outside a transaction, on PostgreSQL,
an event no inline projection reads is one INSERT that commits by itself.

It needs the Flask app (database engine, Redis): call it inside an app context
(a request, a CLI command, a job, a test's `app.app_context()`), or pass
`app=` from a script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from flask import Flask, has_app_context
from sqlalchemy import Connection

from webapp.core import db
from webapp.eventstore import (
    ANY,
    MAX_AGGREGATE_ID,
    MAX_AGGREGATE_TYPE,
    Event,
    Metadata,
    NewEvent,
    StreamId,
    UnknownTenant,
    append,
    has_inline,
)

MAX_NAME = MAX_AGGREGATE_TYPE  # event type, aggregate type (100)
MAX_ID = MAX_AGGREGATE_ID  # aggregate id (200)
# Event types and streams the product itself owns: appended only by its own code,
# which keeps their rules (sealed personal data, run bookkeeping).
RESERVED_TYPES = ("user.", "workflow.")
RESERVED_AGGREGATES = ("user", "workflow-run")


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class PublishError(ValueError):
    """The event cannot be published as given (bad type, aggregate, payload or tenant)."""


def _check_name(what: str, value: object, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PublishError(f"{what} must be a non-empty string")
    if len(value) > limit or value != value.strip():
        raise PublishError(f"{what} must be at most {limit} characters, without outer spaces")
    if _CONTROL.search(value):  # a NUL is refused by PostgreSQL, stored by SQLite
        raise PublishError(f"{what} must not contain control characters")
    return value


def _check_payload(payload: object) -> dict[str, Any]:
    if payload is None:
        return {}
    if not isinstance(payload, Mapping):
        raise PublishError("payload must be a JSON object (a dict)")
    try:
        return dict(json.loads(json.dumps(dict(payload), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise PublishError(f"payload must be JSON-serialisable: {exc}") from None


def _append(
    conn: Connection, stream: StreamId, event: NewEvent, version: int, meta: Metadata
) -> Event:
    try:  # on PostgreSQL the tenant check is part of the one insert statement
        # Always a dispatch: the process publishing may not mount the
        # workflows (a script, another app) that read this type.
        return append(conn, stream, [event], version, meta, check_tenant=True)[0]
    except UnknownTenant:
        raise PublishError(f"unknown tenant {stream.tenant_id!r}") from None


def publish(
    type: str,
    aggregate_type: str,
    aggregate_id: str,
    payload: Mapping[str, Any] | None = None,
    *,
    tenant: str = "default",
    expected_version: int = ANY,
    actor: str | None = None,
    app: Flask | None = None,
) -> Event:
    """Append one event and queue its dispatch after commit; returns the Event.

    `expected_version` (default: any) makes the append conditional on the
    stream's version (`VersionConflict` otherwise). Raises `PublishError` on
    bad input, before anything is written.
    """
    stream = StreamId(
        _check_name("tenant", tenant, 64),
        _check_name("aggregate type", aggregate_type, MAX_NAME),
        _check_name("aggregate id", str(aggregate_id), MAX_ID),
    )
    event = NewEvent(_check_name("event type", type, MAX_NAME), _check_payload(payload))
    if event.type.startswith(RESERVED_TYPES) or stream.aggregate_type in RESERVED_AGGREGATES:
        raise PublishError(
            "user.* and workflow.* events and the user and workflow-run streams belong to "
            "the product and cannot be published"
        )
    meta = Metadata(actor=actor)
    if not has_app_context():
        if app is None:
            raise RuntimeError(
                "publish() needs the Flask app: call it inside an app context or pass app="
            )
        with app.app_context():
            return _publish(stream, event, expected_version, meta)
    return _publish(stream, event, expected_version, meta)


def _publish(stream: StreamId, event: NewEvent, version: int, meta: Metadata) -> Event:
    conn = db.current_transaction()
    if conn is not None:  # joins the caller's transaction: commits with it
        return _append(conn, stream, event, version, meta)
    if not db.is_sqlite(db.get_engine()) and not has_inline(event.type):
        # Nothing else is written with it: the insert commits by itself.
        with db.statement_commits() as conn:
            return _append(conn, stream, event, version, meta)
    with db.transaction() as conn:
        return _append(conn, stream, event, version, meta)
