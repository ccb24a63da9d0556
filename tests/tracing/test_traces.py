"""Traces (webapp/tracing): one sign-up is one trace from the POST /register
through the `user.registered` event to the verification workflow's reminder
(mail) step; no span attribute carries an address or a sealed value. The spans
go to an in-memory exporter installed by the same `otel.install` the console
and OTLP exporters use."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.support.accounts import PASSWORD, register, user_row
from webapp.accounts import events as ev
from webapp.accounts import users
from webapp.core import db
from webapp.eventstore.reads import read_stream
from webapp.mail.outbox.jobs import sweep_outbox
from webapp.tracing import otel
from webapp.workflows.dispatch.sweep import resume_due_runs

ADDRESS = "ada.lovelace@example.com"


@pytest.fixture
def spans(app: Flask) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    otel.install(exporter)
    otel.instrument_app(app)
    otel.instrument_engine(db.get_engine())
    try:
        yield exporter
    finally:
        otel.uninstrument_app(app)
        otel.uninstall()


def _hex(n: int, width: int) -> str:
    return format(n, f"0{width}x")


def _sign_up_and_remind(client: Any, work: Any, clock: Any) -> None:
    assert register(client, ADDRESS).status_code in (200, 302, 303)
    work()  # the verification run starts and waits for the link
    clock.advance(timedelta(hours=24, minutes=1))
    resume_due_runs("default", clock.now())
    sweep_outbox(None, clock.now())
    work()  # the reminder step records the reminder mail


def test_one_sign_up_is_one_trace_from_the_post_to_the_reminder_step(
    app: Flask, client: Any, work: Any, clock: Any, spans: InMemorySpanExporter
) -> None:
    _sign_up_and_remind(client, work, clock)
    finished = spans.get_finished_spans()
    post = [
        s
        for s in finished
        if s.kind == SpanKind.SERVER
        and s.attributes.get("http.route") == "/register"
        and s.attributes.get("http.method", s.attributes.get("http.request.method")) == "POST"
    ]
    assert len(post) == 1
    request = post[0]
    trace_id = request.context.trace_id

    # The event carries the request's context in its metadata.
    user = user_row(ADDRESS)
    with db.reading() as conn:
        registered = [
            e
            for e in read_stream(conn, users.stream_of(user.tenant_id, user.id))
            if e.type == ev.REGISTERED
        ]
    assert len(registered) == 1
    traceparent = registered[0].metadata["traceparent"]
    assert traceparent.split("-")[1] == _hex(trace_id, 32)
    assert traceparent.split("-")[2] == _hex(request.context.span_id, 16)

    # The run's steps: the branch is a child of the request, the reminder of the branch.
    by_name = {s.name: s for s in finished}
    remind, reminder = by_name["step remind"], by_name["step reminder"]
    assert remind.context.trace_id == reminder.context.trace_id == trace_id
    assert remind.parent is not None and remind.parent.span_id == request.context.span_id
    assert reminder.parent is not None and reminder.parent.span_id == remind.context.span_id
    assert reminder.attributes["workflow.name"] == "email-verification-registered"
    assert reminder.attributes["workflow.step.kind"] == "compute"
    # The jobs and the SQL statements are spans too; a step's statements are its children.
    assert any(s.name.startswith("job ") for s in finished)
    statements = [s for s in finished if s.kind == SpanKind.CLIENT and "db.system" in s.attributes]
    assert statements
    assert any(
        s.parent is not None and s.parent.span_id == reminder.context.span_id for s in statements
    )


def test_no_span_attribute_carries_an_address_or_a_sealed_value(
    app: Flask, client: Any, work: Any, clock: Any, spans: InMemorySpanExporter
) -> None:
    _sign_up_and_remind(client, work, clock)
    # An address and a token in a URL's query string and path stay out too.
    client.get(f"/login?email={ADDRESS}")
    client.get(f"/verify-email/{PASSWORD}?email={ADDRESS}")
    finished = spans.get_finished_spans()
    assert {"GET /login", "GET /verify-email/<token>"} <= {s.name for s in finished}
    assert len(finished) > 20
    user = user_row(ADDRESS)
    with db.reading() as conn:
        stored = read_stream(conn, users.stream_of(user.tenant_id, user.id))
    # The address, the password, and every stored payload value (the sealed
    # address and its ciphertexts among them): none is in any span.
    sealed = [
        str(v) for e in stored for v in e.payload.values() if isinstance(v, str) and len(v) > 6
    ]
    assert sealed
    secrets = {ADDRESS, ADDRESS.split("@")[0], PASSWORD, *sealed}
    for span in finished:
        texts = [span.name, *(str(v) for v in (span.attributes or {}).values())]
        texts += [str(v) for e in span.events for v in (e.attributes or {}).values()]
        for text in texts:
            for secret in secrets:
                assert secret not in text, (span.name, text)


def test_a_request_that_matched_no_route_is_named_by_a_placeholder_never_its_path(
    client: Any, spans: InMemorySpanExporter
) -> None:
    # Issue 34: the span of a 404 kept the path (and the token in it) in its name.
    token = "Zq7tokenInThePath9"
    assert client.get(f"/verify-email/{token}/").status_code == 404
    assert client.post(f"/no-such-page/{token}?t={token}").status_code == 404
    assert client.open(f"/verify-email/{token}/", method="BREW").status_code in (404, 405)
    server = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert [s.name for s in server] == ["GET <unmatched>", "POST <unmatched>", "HTTP <unmatched>"]
    for span in spans.get_finished_spans():
        texts = [span.name, *(str(v) for v in (span.attributes or {}).values())]
        texts += [str(v) for e in span.events for v in (e.attributes or {}).values()]
        assert not [t for t in texts if token in t], span.name
