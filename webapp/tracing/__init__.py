"""Traces with OpenTelemetry: a span per request (Flask instrumentation), per SQL
statement (SQLAlchemy instrumentation, statements without their parameters),
per RQ job and per run step. A run is one trace: its steps' parent is the
traceparent its trigger event carries in its metadata (the request that
appended it), else a trace id derived from the run id; so a step run in another
process, after a restart, joins the same trace, and a wait is the gap between
two step spans (docs/operations.md, "Traces").

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_TRACES_EXPORTER=console`) is
set; then it needs the `otel` extra. When off nothing of OpenTelemetry is
imported and no hook is installed (`hooks`). `otel` holds everything that
imports OpenTelemetry.
"""

from __future__ import annotations

import os
from typing import Any

from webapp.core.config import ConfigError


class TracingUnavailable(ConfigError):
    """Tracing is asked for by the environment but the `otel` extra is missing
    (`make run` installs only what running needs): a configuration error, so
    every process stops at start-up with one line saying what to install."""


def wanted(env: Any = os.environ) -> bool:
    return (
        bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
        or env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console"
    )


def start() -> bool:
    """Set up this process's tracer provider (worker and scheduler start-up, and
    the app factory); True when tracing is on."""
    if not wanted():
        return False
    _otel().install()
    return True


def init_app(app: Any, engine: Any) -> None:
    """From the app factory: request spans for `app`, statement spans for `engine`."""
    if not start():
        return
    otel = _otel()
    otel.instrument_app(app)
    otel.instrument_engine(engine)


def _otel() -> Any:
    # OpenTelemetry is an optional extra: imported only when tracing is on.
    try:
        from webapp.tracing import otel
    except ImportError as exc:
        raise TracingUnavailable(
            "OTEL_* tracing settings are set but OpenTelemetry is not installed: "
            "pip install -e '.[otel]'"
        ) from exc
    return otel
