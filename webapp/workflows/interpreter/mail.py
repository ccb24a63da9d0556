"""send_mail: one mail through `webapp.mail.send` (at least once)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp import mail
from webapp.workflows.definition.model import RunContext, SendMail
from webapp.workflows.interpreter.core import resolve, runs


@runs(SendMail)
def send_mail(step: SendMail, ctx: RunContext, conn: Connection | None) -> Any:
    mail.send(  # type: ignore[attr-defined]
        str(resolve(step.to, ctx)),
        str(resolve(step.subject, ctx)),
        str(resolve(step.body, ctx)),
    )
    return {"sent": True}
