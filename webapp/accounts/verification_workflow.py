"""The email-verification reminder, on the workflow engine.

The verification mail itself is recorded in the outbox by the command that
registers the account or changes its address (same transaction; the outbox
retries it). On `user.registered` and on `user.email-changed` (one workflow
each, the same steps) this waits up to 24 h for `user.email-verified` of the
same user *and* the same address (the verified event names the version of the
event that set the address), and on timeout records one reminder in the outbox
(once per address, even if the step runs twice), unless the address was
verified or changed meanwhile.

The steps keep no personal data in their results (they are stored in the
run's events): they return only ids and words.
"""

from __future__ import annotations

from typing import Any

import webapp.workflows as wf
from webapp.accounts import events as ev
from webapp.accounts import registration, users
from webapp.accounts.account import Account
from webapp.core import db

WAIT = "PT24H"


def _current_user(ctx: Any) -> users.User | None:
    with db.reading() as conn:
        user = users.get_user(conn, ctx.trigger.aggregate_id, ctx.trigger.tenant_id)
        if user is None or not Account(user).awaits_verification:
            return None
        if users.address_version(conn, user) != ctx.trigger.version:
            return None  # the address changed since: the newer run takes over
    return user


def send_reminder(ctx: Any) -> str:
    if _current_user(ctx) is None:
        return "skipped"
    with db.transaction() as conn:
        recorded = registration.record_verification(
            conn,
            ctx.trigger.tenant_id,
            ctx.trigger.aggregate_id,
            registration.VERIFICATION_REMINDER,
        )
    return "recorded" if recorded else "already recorded"


def _awaited(ctx: Any) -> Any:
    return wf.match.all_(
        wf.match.eq("user_id", ctx.trigger.aggregate_id),
        wf.match.eq("address_version", ctx.trigger.version),
    )


def _define(name: str, event_type: str) -> wf.Workflow:
    return wf.workflow(
        name,
        on=event_type,
        key=lambda event: f"{event.aggregate_id}:{event.version}",
        awaits={"verified": ev.EMAIL_VERIFIED},
        steps=[
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
    wf.register(ON_REGISTERED)
    wf.register(ON_EMAIL_CHANGED)
