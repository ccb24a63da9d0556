"""Workflow versions for the versions tests; a real worker subprocess loads
them too (`main`: VERSIONS="1" registers v1; "1-finish,2" v1 finish-only and v2)."""

from __future__ import annotations

import os

import webapp.workflows as wf
from webapp.workflows.definition.model import RunContext


def order_no(ctx: RunContext) -> int:
    return int(ctx.trigger.payload["n"])


def v1_result(ctx: RunContext) -> str:
    return f"v1:{ctx['order']}"


def v2_result(ctx: RunContext) -> str:
    return f"v2:{ctx['order']}:{ctx.get('weighed')}"


def weigh(ctx: RunContext) -> int:
    return ctx["order"] * 10


ORDER = wf.compute("order", order_no)
SHIPPED = wf.wait_for_event("shipped", event="shipped", timeout="P7D")
PAUSE = wf.wait("pause", "PT1H")


def v1(start: bool = True) -> wf.Workflow:
    return wf.workflow(
        "ver-order",
        on="ver.ordered",
        awaits={"shipped": "ver.shipped"},
        version=1,
        start=start,
        steps=[ORDER, SHIPPED, wf.ret(v1_result)],
    )


def v2() -> wf.Workflow:
    return wf.workflow(
        "ver-order",
        on="ver.ordered",
        awaits={"shipped": "ver.shipped"},
        version=2,
        steps=[ORDER, wf.compute("weighed", weigh), SHIPPED, wf.ret(v2_result)],
    )


def main() -> None:
    """Worker entry for the subprocess: register the versions asked for, run."""
    from worker.run_worker import main as run_worker
    from worker.tasks import _worker_app

    _worker_app()
    for spec in os.environ["VERSIONS"].split(","):
        if spec == "1":
            wf.register(v1())
        elif spec == "1-finish":
            wf.register(v1(start=False))
        elif spec == "2":
            wf.register(v2())
    run_worker()
