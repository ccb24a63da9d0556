"""send_mail: one mail, recorded in the mail outbox in the transaction that
commits the step's progress (exactly once), then delivered by the outbox with
its retries (`webapp.mail.outbox`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.mail import outbox
from webapp.mail.outbox.tables import RECIPIENT_MAX, SUBJECT_MAX
from webapp.workflows.definition.model import RunContext, SendMail
from webapp.workflows.interpreter.core import resolve, runs

KIND = "workflow"


def _header(name: str, value: Any, limit: int) -> str:
    """A header's value, refused (the step fails) when the outbox could not hold
    it or it would inject another header."""
    text = str(value)
    if "\n" in text or "\r" in text:
        raise ValueError(f"send_mail: {name} must be one line")
    if len(text) > limit:
        raise ValueError(f"send_mail: {name} is longer than {limit} characters")
    return text


@runs(SendMail)
def send_mail(step: SendMail, ctx: RunContext, conn: Connection | None) -> Any:
    assert conn is not None, "send_mail runs in its step's transaction"
    to = _header("to", resolve(step.to, ctx), RECIPIENT_MAX)
    if "@" not in to:
        raise ValueError("send_mail: to is not an address")
    mail = outbox.Mail(
        to=to,
        subject=_header("subject", resolve(step.subject, ctx), SUBJECT_MAX),
        body=str(resolve(step.body, ctx)),
    )
    outbox.record(conn, mail, tenant_id=ctx.tenant_id, user_id=None, kind=KIND)
    return {"sent": True}
