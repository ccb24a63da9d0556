"""The soak's workflow (`make soak`, bench/soak.py), loaded by every process of
the soak through WORKFLOW_MODULES=bench.soak_flows.

An order waits on a timer, then for its payment (an awaited event), then sends
a mail and ends: a trigger, a timer, a wake-up by event and a mail per run."""

from __future__ import annotations

from typing import Any

import webapp.workflows as wf

TRIGGER = "soak.order-placed"
PAID = "soak.order-paid"
NAME = "soak-order"
TIMER_S = 3

ORDER = wf.workflow(
    NAME,
    on=TRIGGER,
    key=lambda event: event.aggregate_id,
    on_duplicate="ignore",
    awaits={"paid": PAID},
    steps=[
        wf.wait("cool-off", f"PT{TIMER_S}S"),
        wf.wait_for_event(
            "paid",
            event="paid",
            timeout="PT30M",
            match=lambda ctx: wf.match.eq("order", ctx.trigger.aggregate_id),
        ),
        wf.send_mail(
            "confirm",
            to=lambda ctx: f"{ctx.trigger.aggregate_id}@soak.example.com",
            subject=lambda ctx: f"soak order {ctx.trigger.aggregate_id}",
            body="paid, thank you",
        ),
        wf.ret(lambda ctx: ctx["paid"]),
    ],
)


def register(_app: Any) -> None:
    """The WORKFLOW_MODULES hook: every process of the soak knows the workflow."""
    if NAME not in {w.name for w in wf.registered()}:
        wf.register(ORDER)
