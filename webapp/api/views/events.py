"""POST /api/v1/events (one event) and POST /api/v1/events/batch (up to 100, in
one transaction), both with an optional Idempotency-Key."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.api import idempotency
from webapp.api.endpoint import Call, Reply, endpoint
from webapp.api.problems import Problem
from webapp.api.schemas import BatchIn, BatchOut, EventIn, EventOut
from webapp.core import actors
from webapp.eventstore import ANY, Event, VersionConflict
from webapp.publish import PublishError, publish

ERRORS = (400, 401, 403, 409, 413, 415, 429)


def _out(e: Event) -> EventOut:
    return EventOut(
        id=e.id,
        type=e.type,
        aggregate_type=e.aggregate_type,
        aggregate_id=e.aggregate_id,
        version=e.version,
        position=e.position,
        recorded_at=e.recorded_at,
    )


def _publish(call: Call, e: EventIn, pointer: str) -> Event:
    """publish() inside the request's transaction (it joins it)."""
    try:
        return publish(
            e.type,
            e.aggregate_type,
            e.aggregate_id,
            e.payload,
            tenant=call.token.tenant_id,
            expected_version=ANY if e.expected_version is None else e.expected_version,
            actor=actors.api_token(call.token.id),
        )
    except PublishError as exc:
        raise Problem(
            "invalid-request", str(exc), [{"pointer": pointer, "detail": str(exc)}]
        ) from None
    except VersionConflict as exc:
        raise Problem("conflict", str(exc)) from None


def _reply(model: type[EventOut | BatchOut], answer: tuple[int, Any, bool]) -> Reply:
    status, data, replayed = answer
    headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return Reply(status, model.model_validate(data), headers)


@endpoint(
    "POST",
    "/events",
    summary="Publish one event",
    tag="events",
    scope="events:write",
    body=EventIn,
    responses={201: EventOut},
    errors=ERRORS,
    idempotent=True,
)
def publish_event(call: Call) -> Reply:
    """Appends the event to its stream in the token's tenant. Workflows it
    triggers start within moments, after the commit."""
    key = idempotency.key_from_request()
    if key is None:  # publish's own transaction (on PostgreSQL often one statement)
        return Reply(201, _out(_publish(call, call.body, "")))

    def write(_conn: Connection) -> tuple[int, Any]:
        return 201, _out(_publish(call, call.body, "")).model_dump(mode="json")

    body = call.body.model_dump(mode="json")
    return _reply(EventOut, idempotency.once(call.token.tenant_id, key, body, write))


@endpoint(
    "POST",
    "/events/batch",
    summary="Publish up to 100 events in one transaction",
    tag="events",
    scope="events:write",
    body=BatchIn,
    responses={201: BatchOut},
    errors=ERRORS,
    idempotent=True,
)
def publish_batch(call: Call) -> Reply:
    """All the events are appended, in the order given, or none is (a bad
    event, or a version conflict, refuses the whole batch)."""
    key = idempotency.key_from_request()

    def write(_conn: Connection) -> tuple[int, Any]:
        events = [_publish(call, e, f"/events/{i}") for i, e in enumerate(call.body.events)]
        return 201, BatchOut(events=[_out(e) for e in events]).model_dump(mode="json")

    body = call.body.model_dump(mode="json")
    return _reply(BatchOut, idempotency.once(call.token.tenant_id, key, body, write))
