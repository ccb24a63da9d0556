"""The workflow of the backup tests, loaded by their real worker processes
through WORKFLOW_MODULES=tests.backup.flows: an order waits a second (a
timer), then for its payment (an awaited event)."""

from __future__ import annotations

import webapp.workflows as wf
from webapp.workflows import register

ORDER = register(
    wf.workflow(
        "bk-order",
        on="bk.placed",
        key=lambda event: event.aggregate_id,
        on_duplicate="ignore",
        awaits={"paid": "bk.paid"},
        steps=[
            wf.wait("cool-off", "PT1S"),
            wf.wait_for_event(
                "paid",
                event="paid",
                timeout="PT1H",
                match=lambda ctx: wf.match.eq("order", ctx.trigger.aggregate_id),
            ),
            wf.ret(lambda ctx: ctx["paid"]),
        ],
    )
)
