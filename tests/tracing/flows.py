"""The workflow of the restart test, loaded by its worker processes through
WORKFLOW_MODULES=tests.tracing.flows (and in the test process by the same setting)."""

from __future__ import annotations

import webapp.workflows as wf
from webapp.workflows import register

TWO_STEPS = register(
    wf.workflow(
        "trace-two-steps",
        on="trace.start",
        awaits={"go": "trace.go"},
        steps=[
            wf.compute("first", lambda ctx: 1),
            wf.wait_for_event(
                "go",
                event="go",
                timeout="PT24H",
                match=lambda ctx: wf.match.eq("key", ctx.trigger.aggregate_id),
            ),
            wf.compute("second", lambda ctx: 2),
        ],
    )
)
