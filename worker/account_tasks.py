"""Jobs queued by releases before the mail outbox (ids only). Account mails
are now recorded in the outbox with the change that causes them, by the
capability's own module (registration, change_password, ...), and delivered by
`worker.mail_tasks.deliver`; a job of the old kind still in the queue at
upgrade records its mail there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webapp.accounts.change_email import record_email_changed_notice
from webapp.accounts.change_password import record_password_changed
from webapp.accounts.deletion import record_deletion_requested
from webapp.accounts.registration import record_registration_attempt, record_verification
from webapp.core import db
from worker.tasks import in_app


def _record(fn: Callable[..., Any], *args: Any) -> str:
    try:
        with db.transaction() as conn:
            fn(conn, *args)
    except LookupError:
        return "user gone"
    return "recorded"


@in_app
def send_verification(tenant_id: str, user_id: str) -> str:
    return _record(record_verification, tenant_id, user_id)


@in_app
def send_password_changed(tenant_id: str, user_id: str) -> str:
    return _record(record_password_changed, tenant_id, user_id)


@in_app
def send_registration_attempt(tenant_id: str, user_id: str) -> str:
    return _record(record_registration_attempt, tenant_id, user_id)


@in_app
def send_deletion_requested(tenant_id: str, user_id: str) -> str:
    return _record(record_deletion_requested, tenant_id, user_id)


@in_app
def send_email_changed_notice(tenant_id: str, user_id: str, version: int) -> str:
    return _record(record_email_changed_notice, tenant_id, user_id, version)
