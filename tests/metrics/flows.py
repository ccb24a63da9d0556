"""Workflows for the metrics tests, loaded by real worker processes through
WORKFLOW_MODULES=tests.metrics.flows (and in the test process by the same setting)."""

from __future__ import annotations

from typing import Any

import webapp.workflows as wf
from webapp.workflows import register


def _boom(_ctx: Any) -> Any:
    raise RuntimeError("this step always fails")


OK = register(
    wf.workflow(
        "metrics-ok",
        on="metrics.ok",
        steps=[wf.compute("one", lambda ctx: 1), wf.ret(lambda ctx: ctx["one"])],
    )
)
BOOM = register(wf.workflow("metrics-boom", on="metrics.boom", steps=[wf.compute("x", _boom)]))
WAITING = register(
    wf.workflow("metrics-waiting", on="metrics.wait", steps=[wf.wait("nap", "P1D"), wf.ret(1)])
)
