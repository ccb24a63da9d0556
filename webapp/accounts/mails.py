"""Kept for one release: the jobs queued by releases before the mail outbox
(worker/account_tasks.py) record their mail through these names. Each account
mail now lives with its capability (registration.py, change_email.py, ...)."""

from __future__ import annotations

from webapp.accounts.change_email import record_email_changed_notice
from webapp.accounts.change_password import record_password_changed
from webapp.accounts.deletion import record_deletion_requested
from webapp.accounts.registration import record_registration_attempt, record_verification

__all__ = [
    "record_deletion_requested",
    "record_email_changed_notice",
    "record_password_changed",
    "record_registration_attempt",
    "record_verification",
]
