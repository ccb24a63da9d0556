"""The email-verification workflow (issue 3 item 12), on the workflow engine.

On `user.registered` and on `user.email-changed` (one workflow each, the same
steps): send the verification mail inside a retry (3 attempts, exponential
backoff), wait up to 24 h for `user.email-verified` of the same user *and* the
same address (the verified event names the version of the event that set the
address), and on timeout send one reminder, unless the address was verified
or changed meanwhile.

The steps keep no personal data in their results (they are stored in the
run's events): they look the address up when they send and return only ids.
"""

from __future__ import annotations

from typing import Any

from webapp import db
from webapp.accounts import events as ev
from webapp.accounts import mails, users, verification
from webapp.workflows import api as wf
from webapp.workflows import match, registry

WAIT = "PT24H"


def _current_user(ctx: Any) -> users.User | None:
    with db.reading() as conn:
        user = users.get_user(conn, ctx.trigger.aggregate_id, ctx.trigger.tenant_id)
        if user is None or user.email_verified:
            return None
        if users.address_version(conn, user) != ctx.trigger.version:
            return None  # the address changed since: the newer run takes over
    return user


def send_first(ctx: Any) -> str:
    user = _current_user(ctx)
    if user is None:
        return "skipped"
    mails.send_verification(user)  # raises on failure: the retry step tries again
    return "sent"


def send_reminder(ctx: Any) -> str:
    user = _current_user(ctx)
    if user is None:
        return "skipped"
    mails.send_verification(user, reminder=True)
    return "sent"


def _awaited(ctx: Any) -> Any:
    return match.all_(
        match.eq("user_id", ctx.trigger.aggregate_id),
        match.eq("address_version", ctx.trigger.version),
    )


def _define(name: str, event_type: str) -> wf.Workflow:
    return wf.workflow(
        name,
        on=event_type,
        key=lambda event: f"{event.aggregate_id}:{event.version}",
        awaits={"verified": ev.EMAIL_VERIFIED},
        steps=[
            wf.retry("send", times=3, backoff="exponential", do=[wf.compute("mail", send_first)]),
            wf.wait_for_event("verified", event="verified", timeout=WAIT, match=_awaited),
            wf.branch(
                "remind",
                if_=lambda ctx: ctx["verified"] is None,
                then=[wf.compute("reminder", send_reminder)],
            ),
        ],
    )


ON_REGISTERED = _define("email-verification-registered", ev.REGISTERED)
ON_EMAIL_CHANGED = _define("email-verification-changed", ev.EMAIL_CHANGED)


def register() -> None:
    registry.register(ON_REGISTERED)
    registry.register(ON_EMAIL_CHANGED)
    verification.set_handled_by_workflow(True)
