"""Deleting an account: asked for in the app (the profile's or the privacy
center's *Delete account*) or signed out by a link mailed to the address
(`/delete-account`), cancelled within the grace period
(`ACCOUNT_DELETION_GRACE_DAYS`); the daily job then erases it (erase_accounts.py).

In the app the request ends every other session (this one stays, to cancel).
The signed-out link: asking always answers the same; only an active account
gets a mail (at most one a minute and three an hour); the link is valid 60
minutes, single use, bound to its request (asking again voids the older link);
confirming ends every session. Signing in during the grace period is allowed,
whichever way it was asked for, so the owner can cancel.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

from flask_babel import force_locale, format_date
from sqlalchemy import Connection

from webapp.accounts import addresses, notices, signed_links, signins
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.credentials import check_password, config
from webapp.accounts.result import INVALID_CREDENTIALS, Result, retry_on_conflict
from webapp.accounts.stream import RowChange, append_to, change, unsealed
from webapp.accounts.users import User, find_by_email, get_user, stream_of
from webapp.core import clock, db
from webapp.eventstore import Event, read_stream

# Outbox kinds.
DELETION_REQUESTED = "deletion-requested"
DELETION_CANCELLED = "deletion-cancelled"
DELETION_LINK = "deletion-link"

LINK_SENT = "privacy.deleteLink.sent"
LINK_INVALID = "privacy.deleteLink.invalid"
LINK_ACTOR = "deletion-link"


def _due() -> datetime:
    return clock.now() + timedelta(days=config().account_deletion_grace_days)


def request_deletion(user: User, password: str) -> Result:
    """Schedule the erasure and sign out every other session; this one stays,
    so the user can cancel."""
    due, token = _due(), secrets.token_urlsafe(24)
    early = Account(user).request_deletion(due, token)  # before the costly password check
    if isinstance(early, Refusal):
        return Result.refused(early)
    if not check_password(user, password):
        return Result.error(INVALID_CREDENTIALS, "current_password")

    def then(conn: Connection, row: User) -> None:
        signins.end_others(conn, row, keep=user.sign_in)
        record_deletion_requested(conn, row.tenant_id, row.id)

    success = Result(True, "profile.danger.requested", {"due_at": due}, session_token=token)
    return change(user, lambda account: account.request_deletion(due, token), success, then)


def cancel_deletion(user: User) -> Result:
    return change(
        user,
        lambda account: account.cancel_deletion(clock.now()),
        Result(True, "profile.danger.cancelSuccess"),
        lambda conn, row: record_deletion_cancelled(conn, row.tenant_id, row.id),
    )


# --- signed out: the link by mail ------------------------------------------------------
def request_link(email_raw: str) -> Result:
    email = addresses.normalize(email_raw)
    if email is None:
        return Result(True, LINK_SENT)
    with db.transaction() as conn:
        user = find_by_email(conn, email)
        request_id = str(uuid.uuid4())
        decision = Account(user).request_deletion_link(request_id)
        if user is None or isinstance(decision, Refusal):
            return Result(True, LINK_SENT)
        if notices.limit_reached(conn, user, DELETION_LINK):
            return Result(True, LINK_SENT)  # the owner has a fresh link already
        append_to(conn, user, decision, actor="anonymous")
        token = signed_links.make(
            config().secret_key, signed_links.DELETE_ACCOUNT, {"u": user.id, "r": request_id}
        )
        record_deletion_link(conn, user, token)
    return Result(True, LINK_SENT)


def _latest_request(conn: Connection, user: User) -> str | None:
    found = None
    for e in read_stream(conn, stream_of(user.tenant_id, user.id)):
        if e.type == ev.DELETION_LINK_REQUESTED:
            found = e.payload.get("request_id")
    return found


def _link(conn: Connection, token: str, session_token: str = "") -> tuple[User, Any]:
    """The link's user and the account's decision; `TokenError` when void (a
    non-active account answers like an invalid link: no status leak)."""
    if len(token) > 500:
        raise signed_links.TokenError("invalid")
    data = signed_links.load(config().secret_key, signed_links.DELETE_ACCOUNT, token)
    user = get_user(conn, str(data.get("u", "")))
    decision = Account(user).confirm_deletion_link(_due(), session_token)
    if signed_links.is_spent(conn, token) or user is None or isinstance(decision, Refusal):
        raise signed_links.TokenError("invalid")
    if _latest_request(conn, user) != data.get("r"):
        raise signed_links.TokenError("invalid")  # an older request's link
    return user, decision


def check_link(token: str) -> Result:
    try:
        with db.reading() as conn:
            _link(conn, token)
    except signed_links.TokenError:
        return Result.error(LINK_INVALID)
    return Result(True, "privacy.deleteLink.confirmIntro")


def confirm_link(token: str) -> Result:
    def attempt() -> Result:
        with db.transaction() as conn:
            user, decision = _link(conn, token, secrets.token_urlsafe(24))
            signed_links.spend(conn, token, user.tenant_id, user.id)
            (requested,) = append_to(conn, user, decision, actor=LINK_ACTOR)
            signins.end_all(conn, user.tenant_id, user.id)
            record_deletion_requested(conn, user.tenant_id, user.id)
        due = datetime.fromisoformat(requested.payload["due_at"])
        return Result(True, "privacy.deleteLink.scheduled", {"due_at": due})

    try:
        return retry_on_conflict(attempt)
    except signed_links.TokenError:
        return Result.error(LINK_INVALID)


# --- mails ---------------------------------------------------------------------------
def record_deletion_requested(conn: Connection, tenant_id: str, user_id: str) -> None:
    user = notices.user_of(conn, tenant_id, user_id)
    if user.deletion_due_at is None:
        return
    with force_locale(user.language or "en"):
        date = format_date(user.deletion_due_at, format="long")
    notices.record(conn, user, DELETION_REQUESTED, "mail.deletionRequested", "/profile", date=date)


def record_deletion_cancelled(conn: Connection, tenant_id: str, user_id: str) -> None:
    notices.record(
        conn,
        notices.user_of(conn, tenant_id, user_id),
        DELETION_CANCELLED,
        "mail.deletionCancelled",
        "/reset-password",
    )


def record_deletion_link(conn: Connection, user: User, token: str) -> None:
    notices.record(
        conn,
        user,
        DELETION_LINK,
        "privacy.mail.deletionLink",
        f"/delete-account/{token}",
        duration=signed_links.LIFETIMES[signed_links.DELETE_ACCOUNT],
    )


# --- the `users` row (written by projection.py) -----------------------------------------
def _requested_row(conn: Connection, e: Event) -> dict[str, Any]:
    # The request also ends every other session (a new token; older events lack it).
    token = {"session_token": unsealed(conn, e, "session_token")} if "session_token" in e.payload else {}  # fmt: skip
    due = datetime.fromisoformat(e.payload["due_at"])
    return {"status": ev.DELETION_REQUESTED_STATUS, "deletion_due_at": due, **token}


ROW_CHANGES: dict[str, RowChange] = {
    ev.DELETION_REQUESTED: _requested_row,
    ev.DELETION_CANCELLED: lambda conn, e: {"status": ev.ACTIVE, "deletion_due_at": None},
}
