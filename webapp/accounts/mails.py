"""The account mails: subject and body in the user's language, with links.

Used by worker jobs (worker/account_tasks.py) and the verification workflow.
"""

from __future__ import annotations

from flask import current_app
from flask_babel import force_locale, format_date, gettext
from sqlalchemy import Connection

from webapp import mail
from webapp.accounts import crypto, links
from webapp.accounts import events as ev
from webapp.accounts.users import User
from webapp.eventstore import StreamId, read_stream


def _base() -> str:
    return str(current_app.config["APP_CONFIG"].base_url)


def _lang(user: User) -> str:
    return user.language or "en"


def _send(user: User, to: str, subject_key: str, body_key: str, **params: object) -> None:
    with force_locale(_lang(user)):
        subject = gettext(subject_key)
        body = gettext(body_key, **params)  # type: ignore[arg-type]
    mail.send(to, subject, body)


def verification_link(user: User) -> str:
    return f"{_base()}/verify-email/{links.verification_token(user)}"


def send_verification(user: User, reminder: bool = False) -> None:
    _send(
        user,
        user.email,
        "mail.verify.subject",
        "mail.verify.reminderBody" if reminder else "mail.verify.body",
        link=verification_link(user),
    )


def send_password_changed(user: User) -> None:
    _send(
        user,
        user.email,
        "mail.passwordChanged.subject",
        "mail.passwordChanged.body",
        link=f"{_base()}/login",
    )


def send_registration_attempt(user: User) -> None:
    _send(
        user,
        user.email,
        "mail.registerAttempt.subject",
        "mail.registerAttempt.body",
        link=f"{_base()}/login",
    )


def send_deletion_requested(user: User) -> None:
    if user.deletion_due_at is None:
        return
    with force_locale(_lang(user)):
        date = format_date(user.deletion_due_at, format="long")
    _send(
        user,
        user.email,
        "mail.deletionRequested.subject",
        "mail.deletionRequested.body",
        date=date,
        link=f"{_base()}/profile",
    )


def send_email_changed_notice(conn: Connection, user: User, version: int) -> bool:
    """To the address from before the change at `version`, with the revert link."""
    stream = StreamId(user.tenant_id, ev.AGGREGATE, user.id)
    change = next((e for e in read_stream(conn, stream, version - 1) if e.version == version), None)
    if change is None or change.type != ev.EMAIL_CHANGED:
        return False
    previous = crypto.unseal_for(conn, user.tenant_id, user.id, change.payload["previous_email"])
    link = f"{_base()}/email-change/revert/{links.revert_token(user.id, version)}"
    _send(user, previous, "mail.emailChanged.subject", "mail.emailChanged.body", link=link)
    return True
