"""POST /api/v1/events and /api/v1/events/batch: what a service publishing
over HTTP relies on. An event lands once (also when the request is retried
with its Idempotency-Key, also when two retries race), a batch lands whole or
not at all, and every bad request is refused with the field that is wrong
and nothing written."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.api import bearer, problem
from tests.support.workflows import only_run
from webapp.api import idempotency
from webapp.core import db
from webapp.eventstore import read_all

ORDER = {
    "type": "order.placed",
    "aggregateType": "order",
    "aggregateId": "42",
    "payload": {"total": 1200},
}


def published(types: tuple[str, ...] = ("order.placed", "order.paid")) -> list[Any]:
    with db.reading() as conn:
        return read_all(conn, 0, types=types)


def test_publish_one_event_starts_its_workflow(
    client: FlaskClient, token: Any, use_workflow: Any, work: Any
) -> None:
    use_workflow(
        wf.workflow(
            "follow-up", on="order.placed", steps=[wf.ret(lambda c: c.trigger.payload["total"])]
        )
    )
    resp = client.post("/api/v1/events", json=ORDER, headers=bearer(token("events:write")))
    assert resp.status_code == 201, resp.get_json()
    body = resp.get_json()
    [event] = published()
    assert body == {
        "id": event.id,
        "type": "order.placed",
        "aggregateType": "order",
        "aggregateId": "42",
        "version": 1,
        "position": event.position,
        "recordedAt": body["recordedAt"],
    }
    assert event.payload == {"total": 1200} and event.tenant_id == "default"
    assert event.metadata["actor"].startswith("api-token:")
    work()
    assert only_run("follow-up").status == "completed"


def test_a_batch_lands_whole_in_order_or_not_at_all(client: FlaskClient, token: Any) -> None:
    secret = token("events:write")
    batch = {"events": [dict(ORDER, aggregateId=str(i)) for i in range(3)]}
    resp = client.post("/api/v1/events/batch", json=batch, headers=bearer(secret))
    assert resp.status_code == 201
    ids = [e["id"] for e in resp.get_json()["events"]]
    assert [e.id for e in published()] == ids
    assert [e["aggregateId"] for e in resp.get_json()["events"]] == ["0", "1", "2"]

    # One bad event (a type the product reserves) refuses the whole batch.
    bad = {"events": [dict(ORDER, aggregateId="7"), dict(ORDER, type="user.deleted")]}
    p = problem(client.post("/api/v1/events/batch", json=bad, headers=bearer(secret)), 400)
    assert p["errors"][0]["pointer"] == "/events/1" and "user.*" in p["detail"]
    # So does a version conflict on its last event: the first is rolled back too.
    stale = {
        "events": [dict(ORDER, aggregateId="8"), dict(ORDER, aggregateId="0", expectedVersion=0)]
    }
    p = problem(client.post("/api/v1/events/batch", json=stale, headers=bearer(secret)), 409)
    assert "version conflict" in p["detail"]
    assert len(published()) == 3
    too_many = {"events": [ORDER] * 101}
    p = problem(client.post("/api/v1/events/batch", json=too_many, headers=bearer(secret)), 400)
    assert p["errors"] == [
        {
            "pointer": "/events",
            "detail": "List should have at most 100 items after validation, not 101",
        }
    ]
    p = problem(
        client.post("/api/v1/events/batch", json={"events": []}, headers=bearer(secret)), 400
    )
    assert p["errors"][0]["pointer"] == "/events"
    assert len(published()) == 3


def test_an_idempotency_key_replays_the_same_request_and_refuses_another(
    client: FlaskClient, token: Any
) -> None:
    secret = token("events:write")
    key = {"Idempotency-Key": "order-42-placed"}
    first = client.post("/api/v1/events", json=ORDER, headers=bearer(secret, **key))
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    # The same body, sent again with other spacing and key order: the first answer.
    again = client.post(
        "/api/v1/events",
        data=json.dumps(dict(reversed(list(ORDER.items()))), indent=3),
        content_type="application/json",
        headers=bearer(secret, **key),
    )
    assert again.status_code == 201 and again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(published()) == 1
    # Another body with the same key: 409, nothing appended.
    other = dict(ORDER, payload={"total": 1300})
    p = problem(client.post("/api/v1/events", json=other, headers=bearer(secret, **key)), 409)
    assert p["type"].endswith("/idempotency-key-reused")
    # The key is the tenant's: the same key on the batch route is another request.
    p = problem(
        client.post(
            "/api/v1/events/batch", json={"events": [ORDER]}, headers=bearer(secret, **key)
        ),
        409,
    )
    # A request that failed keeps no key: corrected, it goes through.
    key2 = {"Idempotency-Key": "batch-1"}
    bad = {"events": [dict(ORDER, type="workflow.x")]}
    problem(client.post("/api/v1/events/batch", json=bad, headers=bearer(secret, **key2)), 400)
    good = client.post(
        "/api/v1/events/batch", json={"events": [ORDER]}, headers=bearer(secret, **key2)
    )
    assert good.status_code == 201
    replay = client.post(
        "/api/v1/events/batch", json={"events": [ORDER]}, headers=bearer(secret, **key2)
    )
    assert replay.get_json() == good.get_json() and replay.headers["Idempotent-Replayed"] == "true"
    assert len(published()) == 2
    # Another tenant's token may use the same key for its own request.
    elsewhere = token("events:write", tenant="acme")
    assert (
        client.post("/api/v1/events", json=other, headers=bearer(elsewhere, **key)).status_code
        == 201
    )
    for bad_key in ("", "x" * 201, "tab\there", "é"):
        p = problem(
            client.post(
                "/api/v1/events", json=ORDER, headers=bearer(secret, **{"Idempotency-Key": bad_key})
            ),
            400,
        )
        assert p["errors"][0]["parameter"] == "Idempotency-Key"


def test_retries_racing_with_one_key_append_once(app: Flask, token: Any) -> None:
    """Eight clients send the same request with one key at the same moment:
    one event is appended, and all eight get its answer."""
    secret = token("events:write")
    start = threading.Barrier(8)
    answers: list[Any] = []

    def send() -> None:
        with app.app_context():
            c = app.test_client()
            start.wait()
            r = c.post(
                "/api/v1/events", json=ORDER, headers=bearer(secret, **{"Idempotency-Key": "k"})
            )
            answers.append((r.status_code, r.get_json()))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(published()) == 1
    assert {status for status, _ in answers} == {201}
    assert len({json.dumps(body, sort_keys=True) for _, body in answers}) == 1


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        # wrong types: a number for a string, a string for an object, 1.5, "1" and true for
        # an integer (1.0 is one, as JSON Schema says)
        (
            dict(ORDER, aggregateId=42, payload="x", expectedVersion=1.5),
            [("/aggregateId", "string"), ("/payload", "object"), ("/expectedVersion", "integer")],
        ),
        (dict(ORDER, expectedVersion=True), [("/expectedVersion", "integer")]),
        (dict(ORDER, expectedVersion="1"), [("/expectedVersion", "integer")]),
        (dict(ORDER, expectedVersion=2**31), [("/expectedVersion", "less than or equal")]),
        # over-long strings
        (
            dict(ORDER, type="t" * 101, aggregateType="a" * 101, aggregateId="i" * 201),
            [
                ("/type", "at most 100"),
                ("/aggregateType", "at most 100"),
                ("/aggregateId", "at most 200"),
            ],
        ),
        # unknown fields, snake_case names included
        (
            dict(ORDER, aggregate_type="order", extra=1),
            [("/aggregate_type", "Unknown field"), ("/extra", "Unknown field")],
        ),
        # missing fields, a control character, outer spaces
        ({"type": "order.placed"}, [("/aggregateType", "required"), ("/aggregateId", "required")]),
        (
            dict(ORDER, type="order\x00placed", aggregateId=" 42"),
            [("/type", "pattern"), ("/aggregateId", "pattern")],
        ),
        ([ORDER], [("/", "object")]),
    ],
)
def test_bad_events_are_refused_with_every_field_error(
    client: FlaskClient, token: Any, body: Any, errors: list[tuple[str, str]]
) -> None:
    resp = client.post("/api/v1/events", json=body, headers=bearer(token("events:write")))
    p = problem(resp, 400)
    got = [(e["pointer"], e["detail"]) for e in p["errors"]]
    assert [g[0] for g in got] == [e[0] for e in errors], got
    for (_, detail), (_, word) in zip(got, errors, strict=True):
        assert word in detail, (detail, word)
    assert published() == []


def test_bodies_that_are_not_json_or_too_large(client: FlaskClient, token: Any, app: Flask) -> None:
    secret = token("events:write")
    deep = "[" * 10_000 + "]" * 10_000
    for raw in ("{", '{"type": "a",}', "NaN", "\xff", "", '{"type": "\\ud800"}', deep):
        p = problem(
            client.post(
                "/api/v1/events", data=raw, content_type="application/json", headers=bearer(secret)
            ),
            400,
        )
        assert p["type"].endswith("/malformed-json"), (raw, p)
    # NaN inside the payload is not JSON either (RFC 8259): refused, not stored.
    nan = '{"type":"a.b","aggregateType":"a","aggregateId":"1","payload":{"x":NaN}}'
    problem(
        client.post(
            "/api/v1/events", data=nan, content_type="application/json", headers=bearer(secret)
        ),
        400,
    )
    p = problem(
        client.post(
            "/api/v1/events",
            data=json.dumps(ORDER),
            content_type="text/plain",
            headers=bearer(secret),
        ),
        415,
    )
    huge = dict(ORDER, payload={"blob": "x" * app.config["MAX_CONTENT_LENGTH"]})
    p = problem(client.post("/api/v1/events", json=huge, headers=bearer(secret)), 413)
    assert str(app.config["MAX_CONTENT_LENGTH"]) in p["detail"]
    assert published() == []


def test_keys_are_forgotten_after_a_day(client: FlaskClient, token: Any, clock: Any) -> None:
    """The hourly sweep deletes keys older than 24 hours: the key may then
    name a new request."""
    secret = token("events:write")
    key = {"Idempotency-Key": "daily-report"}
    assert (
        client.post("/api/v1/events", json=ORDER, headers=bearer(secret, **key)).status_code == 201
    )
    other = dict(ORDER, aggregateId="43")
    clock.advance(timedelta(hours=23))
    idempotency.sweep(None, clock.now())
    problem(client.post("/api/v1/events", json=other, headers=bearer(secret, **key)), 409)
    clock.advance(timedelta(hours=2))
    idempotency.sweep(None, clock.now())
    assert (
        client.post("/api/v1/events", json=other, headers=bearer(secret, **key)).status_code == 201
    )
    assert len(published()) == 2
