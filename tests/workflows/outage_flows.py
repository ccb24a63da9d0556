"""Workflows for the outage tests, loaded by real worker and scheduler processes
through WORKFLOW_MODULES=tests.workflows.outage_flows."""

from __future__ import annotations

import webapp.workflows as wf
from webapp.workflows import register

NAP = register(
    wf.workflow(
        "outage-nap",
        on="outage.requested",
        steps=[
            wf.compute("before", lambda ctx: ctx.trigger.aggregate_id),
            wf.wait("nap", "PT1S"),
            wf.compute("after", lambda ctx: ctx["before"] + "!"),
            wf.ret(lambda ctx: ctx["after"]),
        ],
    )
)
