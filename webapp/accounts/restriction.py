"""Restrict processing (Art. 18): the account is frozen, every session ends,
sign-in is refused, no mail or workflow step goes out for the user except the
notices the law requires (account.py: `accepts_mail`). Asked for on the
privacy page; only an operator lifts it (`flask users lift-restriction EMAIL`),
recorded with the operator as the event's actor.

Only from active: while a deletion is requested restriction is refused, and
while restricted a deletion request is (account.py).
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection

from webapp.accounts import addresses, notices, signins
from webapp.accounts import events as ev
from webapp.accounts.account import RESTRICTED_MAIL, RESTRICTION_LIFTED_MAIL, Account, Refusal
from webapp.accounts.credentials import check_password
from webapp.accounts.result import INVALID_CREDENTIALS, Result, retry_on_conflict
from webapp.accounts.stream import RowChange, append_to, change, fresh, unsealed
from webapp.accounts.users import User, find_by_email
from webapp.core import db

RESTRICTED_TEXT = "privacy.restrict.restricted"


def restrict(user: User, password: str) -> Result:
    token = secrets.token_urlsafe(24)
    refused = Account(user).restrict(token)
    if isinstance(refused, Refusal):
        return Result.refused(refused)
    if not check_password(user, password):
        return Result.error(INVALID_CREDENTIALS, "current_password")

    def then(conn: Connection, row: User) -> None:
        signins.end_all(conn, row.tenant_id, row.id)  # this browser too
        record_restricted(conn, fresh(conn, row))

    return change(
        user, lambda account: account.restrict(token), Result(True, RESTRICTED_TEXT), then
    )


def lift(email_raw: str, actor: str) -> Result:
    """Lift a restriction (operators only; `actor` as webapp.core.actors writes it);
    the user may sign in again."""
    email = addresses.normalize(email_raw)

    def attempt() -> Result:
        with db.transaction() as conn:
            row = find_by_email(conn, email) if email else None
            decision = Account(row).lift_restriction()
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            assert row is not None  # an erased account is refused above
            append_to(conn, row, decision, actor=actor)
            record_restriction_lifted(conn, fresh(conn, row))
        return Result(True, "restriction lifted", user_id=row.id)

    return retry_on_conflict(attempt)


def record_restricted(conn: Connection, user: User) -> None:
    notices.record(conn, user, RESTRICTED_MAIL, "privacy.mail.restricted")


def record_restriction_lifted(conn: Connection, user: User) -> None:
    notices.record(conn, user, RESTRICTION_LIFTED_MAIL, "privacy.mail.restrictionLifted", "/login")


ROW_CHANGES: dict[str, RowChange] = {
    ev.RESTRICTED: lambda conn, e: {
        "status": ev.RESTRICTED_STATUS,
        "session_token": unsealed(conn, e, "session_token"),
    },
    ev.RESTRICTION_LIFTED: lambda conn, e: {"status": ev.ACTIVE},
}
