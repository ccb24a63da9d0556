"""Everything that imports OpenTelemetry (the `otel` extra): the tracer provider
and its exporter from the standard OTEL_* variables, the Flask and SQLAlchemy
instrumentations with nothing personal recorded, and the hooks of
`webapp.tracing.hooks` (event metadata, run steps, RQ jobs)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from flask import Flask, request
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.flask import FlaskInstrumentor
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.http import sanitize_method

from webapp.metrics.web import UNMATCHED
from webapp.tracing import hooks

TRACER = "webapp"
# Probes and scrapes would be most of the spans and tell nothing.
EXCLUDED_URLS = "healthz,readyz,metrics,static"

_provider: TracerProvider | None = None
_propagator = TraceContextTextMapPropagator()
_in_step: ContextVar[bool] = ContextVar("webapp_in_step", default=False)


def install(exporter: SpanExporter | None = None) -> TracerProvider:
    """This process's tracer provider (once), exporting to `exporter` when given
    (each span as it ends: tests), else as the OTEL_* variables say."""
    global _provider
    if _provider is not None:
        return _provider
    provider = TracerProvider(resource=Resource.create({"service.name": _service()}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        # Each span as it ends: a short-lived process (a CLI command) loses none.
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        provider.add_span_processor(BatchSpanProcessor(_otlp()))
    _provider = provider
    hooks.traceparent = _current_traceparent
    hooks.step_span = _step_span
    hooks.job_span = _job_span
    return provider


def uninstall() -> None:
    """Back to off (tests): hooks removed, statement spans off, spans flushed."""
    global _provider
    hooks.traceparent = hooks.step_span = hooks.job_span = None
    instrumentor = SQLAlchemyInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    if _provider is not None:
        _provider.shutdown()
    _provider = None


def instrument_app(app: Flask) -> None:
    FlaskInstrumentor.instrument_app(
        app,
        tracer_provider=_provider,
        excluded_urls=EXCLUDED_URLS,
    )
    app.teardown_request(_scrub_request)


def uninstrument_app(app: Flask) -> None:
    FlaskInstrumentor.uninstrument_app(app)


def instrument_engine(engine: Any) -> None:
    """Statement spans for `engine` (the process's one; a test's newest). The SQL
    is recorded with its placeholders, never the bound values; no sqlcommenter."""
    instrumentor = SQLAlchemyInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    # Its declared range ends below SQLAlchemy 2.1, whose engine events it uses
    # unchanged (tests/tracing pins the statement spans).
    instrumentor.instrument(
        engine=engine, tracer_provider=_provider, enable_commenter=False, skip_dep_check=True
    )


def _service() -> str:
    return os.environ.get("OTEL_SERVICE_NAME") or "webapp"


def _otlp() -> SpanExporter:
    return OTLPSpanExporter()  # endpoint, headers, timeout: from OTEL_EXPORTER_OTLP_*


def _tracer() -> trace.Tracer:
    assert _provider is not None
    return _provider.get_tracer(TRACER)


# What a request span may not keep: the URL (its query string and a path with a
# token in it, /verify-email/<token>), the client's address and user agent. The
# instrumentation sets them after its request hook runs, so a teardown function
# registered after it (Flask runs those in reverse order: ours first, while the
# span is open, on every request, refused ones too) overwrites them: the path
# becomes the route template. A request that matched no route was named after
# its path (`GET /verify-email/<the token>/`): it is renamed `GET <unmatched>`,
# the label the request metrics use.
_URL_KEYS = ("http.target", "url.path")
_BLANKED = (
    "http.url",
    "url.full",
    "url.query",
    "net.peer.ip",
    "http.client_ip",
    "client.address",
    "network.peer.address",
    "http.user_agent",
    "user_agent.original",
)


def _scrub_request(_exc: BaseException | None = None) -> None:
    span = trace.get_current_span()
    if not span.is_recording():
        return
    rule = request.url_rule
    if rule is None:
        span.update_name(f"{_span_method()} {UNMATCHED}")
    for key in _URL_KEYS:
        span.set_attribute(key, rule.rule if rule is not None else "")
    for key in _BLANKED:
        span.set_attribute(key, "")


def _span_method() -> str:
    # As the instrumentation names a matched request's span: an unknown method is HTTP.
    method = sanitize_method(request.method.strip()) or "HTTP"
    return "HTTP" if method == "_OTHER" else method


# --- the hooks -------------------------------------------------------------


def _current_traceparent() -> str | None:
    span = trace.get_current_span()
    if not span.get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


def run_context(ctx: Any) -> otel_context.Context:
    """The run's trace: the traceparent its trigger event carries, else one
    derived from the tenant and run id (the same in every process, for ever)."""
    tp = (ctx.trigger.metadata or {}).get("traceparent")
    if tp:
        extracted = _propagator.extract({"traceparent": tp})
        if trace.get_current_span(extracted).get_span_context().is_valid:
            return extracted
    digest = hashlib.sha256(f"{ctx.tenant_id}:{ctx.run_id}".encode()).hexdigest()
    parent = SpanContext(
        trace_id=int(digest[:32], 16) or 1,
        span_id=int(digest[32:48], 16) or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


@contextmanager
def _step_span(kind: str, name: str, ctx: Any) -> Iterator[Any]:
    attributes = {
        "workflow.name": ctx.workflow_name,
        "workflow.run_id": ctx.run_id,
        "workflow.step": name,
        "workflow.step.kind": kind,
        "workflow.step.index": ctx.step_index,
        "workflow.attempt": ctx.attempt,
    }
    if _in_step.get():  # a step inside a branch, for-each or retry: a child span
        parent, links = None, []
    else:  # a run's step: the run's trace, linked to the job that runs it
        job = trace.get_current_span().get_span_context()
        parent, links = run_context(ctx), ([Link(job)] if job.is_valid else [])
    token = _in_step.set(True)
    try:
        with _tracer().start_as_current_span(
            f"step {name}", context=parent, links=links, attributes=attributes
        ) as span:
            yield span
    finally:
        _in_step.reset(token)


@contextmanager
def _job_span(name: str) -> Iterator[Any]:
    with _tracer().start_as_current_span(
        f"job {name}", kind=trace.SpanKind.CONSUMER, attributes={"messaging.system": "rq"}
    ) as span:
        yield span
