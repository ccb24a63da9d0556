"""Worker jobs of the accounts feature: the account mails.

Each job gets ids only (never an address: Redis holds no personal data), reads
the current state, and sends. A send failure is logged for operators and
re-raised so RQ records the job as failed; the account change stays.
"""

from __future__ import annotations

import logging

from webapp import db
from webapp.accounts import mails, users
from worker.tasks import in_app

log = logging.getLogger(__name__)


def _user(tenant_id: str, user_id: str) -> users.User | None:
    with db.reading() as conn:
        return users.get_user(conn, user_id, tenant_id)


def _run(kind: str, tenant_id: str, user_id: str, send: object) -> str:
    user = _user(tenant_id, user_id)
    if user is None:
        return "user gone"
    try:
        send(user)  # type: ignore[operator]
    except Exception as exc:
        log.error(
            "account mail not sent",
            extra={"mail": kind, "user": user_id, "error_class": type(exc).__name__},
        )
        raise
    return "sent"


@in_app
def send_verification(tenant_id: str, user_id: str) -> str:
    user = _user(tenant_id, user_id)
    if user is not None and user.email_verified:
        return "already verified"
    return _run("verification", tenant_id, user_id, mails.send_verification)


@in_app
def send_password_changed(tenant_id: str, user_id: str) -> str:
    return _run("password-changed", tenant_id, user_id, mails.send_password_changed)


@in_app
def send_registration_attempt(tenant_id: str, user_id: str) -> str:
    return _run("registration-attempt", tenant_id, user_id, mails.send_registration_attempt)


@in_app
def send_deletion_requested(tenant_id: str, user_id: str) -> str:
    return _run("deletion-requested", tenant_id, user_id, mails.send_deletion_requested)


@in_app
def send_email_changed_notice(tenant_id: str, user_id: str, version: int) -> str:
    def send(user: users.User) -> None:
        with db.reading() as conn:
            mails.send_email_changed_notice(conn, user, version)

    return _run("email-changed-notice", tenant_id, user_id, send)
