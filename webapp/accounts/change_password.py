"""Change password (the profile's section): the current password, a new one
under the policy; every other session ends and the owner gets a notice.

An account made through a sign-in provider has no password: its owner sets a
first one there (`set_password`), with a fresh proof of identity instead of a
current password (the view checks it), and the same consequences."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import Connection

from webapp.accounts import events as ev
from webapp.accounts import notices, passwords, signins
from webapp.accounts.credentials import check_new_password, check_password, hasher
from webapp.accounts.result import INVALID_CREDENTIALS, Result
from webapp.accounts.stream import RowChange, change, unsealed
from webapp.accounts.users import User
from webapp.eventstore import Event

PASSWORD_CHANGED = "password-changed"  # outbox kind of the notice


def change_password(user: User, current: str, new: str) -> Result:
    if not check_password(user, current):
        return Result.error(INVALID_CREDENTIALS, "current_password")
    if new == current:
        return Result.error("password.errors.sameAsCurrent", "new_password")
    problem = check_new_password(user.email, new)
    if problem:
        return problem
    new_hash = passwords.hash_password(hasher(), new)
    token = secrets.token_urlsafe(24)

    def then(conn: Connection, row: User) -> None:
        signins.end_others(conn, row, keep=user.sign_in)
        record_password_changed(conn, row.tenant_id, row.id)

    success = Result(True, "profile.password.success", session_token=token)
    return change(user, lambda account: account.change_password(new_hash, token), success, then)


def set_password(user: User, new: str) -> Result:
    """The first password of an account that has none (refused once it has one)."""
    problem = check_new_password(user.email, new)
    if problem:
        return problem
    new_hash = passwords.hash_password(hasher(), new)
    token = secrets.token_urlsafe(24)

    def then(conn: Connection, row: User) -> None:
        signins.end_others(conn, row, keep=user.sign_in)
        record_password_changed(conn, row.tenant_id, row.id, "mail.passwordSet")

    success = Result(True, "profile.password.setSuccess", session_token=token)
    return change(user, lambda account: account.set_password(new_hash, token), success, then)


def record_password_changed(
    conn: Connection, tenant_id: str, user_id: str, keys: str = "mail.passwordChanged"
) -> None:
    """The notice, with a way to take the account back (a reset sends it too)."""
    notices.record(
        conn, notices.user_of(conn, tenant_id, user_id), PASSWORD_CHANGED, keys, "/reset-password"
    )


def changed_row(conn: Connection, e: Event) -> dict[str, Any]:
    return {
        "password_hash": unsealed(conn, e, "password_hash"),
        "session_token": unsealed(conn, e, "session_token"),
    }


ROW_CHANGES: dict[str, RowChange] = {ev.PASSWORD_CHANGED: changed_row}
