"""With no OTEL_* setting tracing costs nothing: the app factory and the worker
start-up import none of our tracing, OpenTelemetry's SDK tracer or its
instrumentations, and install no hook; the same process
with OTEL_TRACES_EXPORTER=console has all three hooks and its app wrapped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import procs

PROBE = """
import json, sys
import worker.run_worker  # the worker start-up's imports
from webapp import create_app
from webapp.tracing import hooks
app = create_app()
print(json.dumps({
    "tracing_modules": sorted(
        m for m in sys.modules
        if m == "webapp.tracing.otel"
        or m.startswith(("opentelemetry.sdk.trace", "opentelemetry.instrumentation"))
    ),
    "hooks": [h is not None for h in (hooks.traceparent, hooks.step_span, hooks.job_span)],
    "wrapped": bool(getattr(app, "_is_instrumented_by_opentelemetry", False)),
}))
"""


def probe(env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_with_tracing_off_nothing_is_imported_or_installed(
    database_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = procs.app_env(database_url, redis_url, tmp_path / "instance")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        env.pop(name, None)
    off = probe(env)
    # (redis-py imports OpenTelemetry's metrics API when it is installed: not ours.)
    assert off == {"tracing_modules": [], "hooks": [False, False, False], "wrapped": False}

    on = probe({**env, "OTEL_TRACES_EXPORTER": "console"})
    assert on["hooks"] == [True, True, True] and on["wrapped"] is True
    assert {"webapp.tracing.otel", "opentelemetry.sdk.trace"} <= set(on["tracing_modules"])


def test_tracing_asked_for_without_the_otel_extra_stops_start_up_with_one_line(
    database_url: str, redis_url: str, tmp_path: Path
) -> None:
    """`make run` installs only what running needs: OpenTelemetry comes with the
    `otel` extra. A process started with OTEL_* set but without it stops at
    start-up saying what to install (a configuration error), never a traceback."""
    env = procs.app_env(database_url, redis_url, tmp_path / "instance")
    env["OTEL_TRACES_EXPORTER"] = "console"
    without_otel = "import sys; sys.modules['opentelemetry'] = None; import wsgi"
    out = subprocess.run(
        [sys.executable, "-c", without_otel],
        cwd=procs.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "configuration error: OTEL_* tracing settings are set but OpenTelemetry is not "
        "installed: pip install -e '.[otel]'"
    ), out.stderr
    assert "Traceback" not in out.stderr
