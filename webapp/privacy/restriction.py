"""Restrict processing (Art. 18): the account is frozen, every session ends,
sign-in is refused, no mail or workflow step goes out for the user except the
notices the law requires. Only an operator lifts it (`flask users
lift-restriction EMAIL`), recorded with the operator as the event's actor.

Only from active: while a deletion is requested restriction is refused, and
while restricted a deletion request is (webapp/accounts/profile_commands.py).
"""

from __future__ import annotations

import secrets

from webapp import db
from webapp.accounts import emails, signins
from webapp.accounts import events as account_events
from webapp.accounts.commands import (
    INVALID_CREDENTIALS,
    Outcome,
    append_to,
    check_password,
    fresh,
    retry_on_conflict,
    seal,
)
from webapp.accounts.users import User, find_by_email
from webapp.eventstore import NewEvent
from webapp.privacy import events as ev
from webapp.privacy import mails

RESTRICTED_TEXT = "privacy.restrict.restricted"


def _refusal(user: User) -> Outcome | None:
    if user.deletion_requested:
        return Outcome.error("privacy.restrict.deletionPending")
    if user.status == account_events.RESTRICTED_STATUS:
        return Outcome.error("privacy.restrict.alreadyRestricted")
    if user.status != account_events.ACTIVE:
        return Outcome.error("profile.errors.generic")
    return None


def restrict(user: User, password: str) -> Outcome:
    refused = _refusal(user)
    if refused:
        return refused
    if not check_password(user, password):
        return Outcome.error(INVALID_CREDENTIALS, "current_password")
    token = secrets.token_urlsafe(24)

    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = fresh(conn, user)
            refused = _refusal(row)
            if refused:
                return refused
            append_to(conn, row, NewEvent(ev.RESTRICTED, {"session_token": seal(conn, row, token)}))
            signins.end_all(conn, row.tenant_id, row.id)  # this browser too
            mails.record_restricted(conn, fresh(conn, row))
        return Outcome(True, RESTRICTED_TEXT)

    return retry_on_conflict(attempt)


def lift(email_raw: str, actor: str) -> Outcome:
    """Lift a restriction (operators only; `actor` as webapp.actors writes it);
    the user may sign in again."""
    email = emails.normalize(email_raw)

    def attempt() -> Outcome:
        with db.transaction() as conn:
            row = find_by_email(conn, email) if email else None
            if row is None:
                return Outcome.error("no account with that address")
            if row.status != account_events.RESTRICTED_STATUS:
                return Outcome.error("that account is not restricted")
            append_to(conn, row, NewEvent(ev.RESTRICTION_LIFTED, {}), actor=actor)
            mails.record_restriction_lifted(conn, fresh(conn, row))
        return Outcome(True, "restriction lifted", user_id=row.id)

    return retry_on_conflict(attempt)
