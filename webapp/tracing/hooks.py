"""The three places our own code records trace data, as hooks the tracing set-up
fills in (`webapp.tracing.otel.install`). This module imports nothing (not even
OpenTelemetry, an optional extra), so the event store and the step interpreter
can call it; while tracing is off every hook is None and a caller pays one
attribute read:

- `traceparent()`: the W3C traceparent of the current span, stored in every
  appended event's metadata;
- `step_span(kind, name, ctx)`: a context manager around one run step;
- `job_span(name)`: a context manager around one RQ job.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

traceparent: Callable[[], str | None] | None = None
step_span: Callable[[str, str, Any], AbstractContextManager[Any]] | None = None
job_span: Callable[[str], AbstractContextManager[Any]] | None = None


def installed() -> bool:
    return traceparent is not None or step_span is not None or job_span is not None
