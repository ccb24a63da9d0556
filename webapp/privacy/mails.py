"""The export's mails, recorded in the outbox in the transaction of the change
that causes them (webapp/accounts/notices.py's `record`: the user's language,
and nothing but the lawful notices while processing is restricted)."""

from __future__ import annotations

from datetime import datetime

from flask_babel import force_locale, format_date
from sqlalchemy import Connection

from webapp.accounts import notices
from webapp.accounts.users import User

EXPORT_READY = "export-ready"
EXPORT_FAILED = "export-failed"


def _date(user: User, when: datetime) -> str:
    with force_locale(user.language or "en"):
        return str(format_date(when, format="long"))


def record_export_ready(conn: Connection, user: User, token: str, expires_at: datetime) -> None:
    notices.record(
        conn,
        user,
        EXPORT_READY,
        "privacy.mail.exportReady",
        f"/privacy/download/{token}",
        date=_date(user, expires_at),
    )


def record_export_failed(conn: Connection, user: User) -> None:
    notices.record(conn, user, EXPORT_FAILED, "privacy.mail.exportFailed", "/privacy")
