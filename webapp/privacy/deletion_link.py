"""Signed-out deletion: a link by mail, then the same grace period as the
profile's *Delete account*.

Asking always answers the same; only an active account gets a mail (at most
one a minute and three an hour). The link is valid 60 minutes, single use, and
bound to its request: asking again voids the older link. Confirming starts the
grace period and ends every session; signing in during the grace period is
allowed, so the owner can cancel. A non-active account answers like an
invalid link (no status leak).
"""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta

from sqlalchemy import Connection

from webapp import clock, db
from webapp.accounts import emails, signins, tokens
from webapp.accounts import events as account_events
from webapp.accounts import mails as account_mails
from webapp.accounts.commands import Outcome, append_to, config, retry_on_conflict, seal
from webapp.accounts.users import User, find_by_email, get_user, stream_of
from webapp.eventstore import NewEvent, read_stream
from webapp.privacy import events as ev
from webapp.privacy import mails

SENT = "privacy.deleteLink.sent"
INVALID = "privacy.deleteLink.invalid"
ACTOR = "deletion-link"


def request_link(email_raw: str) -> Outcome:
    email = emails.normalize(email_raw)
    if email is None:
        return Outcome(True, SENT)
    with db.transaction() as conn:
        user = find_by_email(conn, email)
        if user is None or user.status != account_events.ACTIVE:
            return Outcome(True, SENT)
        if account_mails.limit_reached(conn, user, mails.DELETION_LINK):
            return Outcome(True, SENT)  # the owner has a fresh link already
        request_id = str(uuid.uuid4())
        append_to(
            conn,
            user,
            NewEvent(ev.DELETION_LINK_REQUESTED, {"request_id": request_id}),
            actor="anonymous",
        )
        token = tokens.make(
            config().secret_key, tokens.DELETE_ACCOUNT, {"u": user.id, "r": request_id}
        )
        mails.record_deletion_link(conn, user, token)
    return Outcome(True, SENT)


def _latest_request(conn: Connection, user: User) -> str | None:
    found = None
    for e in read_stream(conn, stream_of(user.tenant_id, user.id)):
        if e.type == ev.DELETION_LINK_REQUESTED:
            found = e.payload.get("request_id")
    return found


def _check(conn: Connection, token: str) -> User:
    if len(token) > 500:
        raise tokens.TokenError("invalid")
    data = tokens.load(config().secret_key, tokens.DELETE_ACCOUNT, token)
    user = get_user(conn, str(data.get("u", "")))
    if tokens.is_spent(conn, token) or user is None or user.status != account_events.ACTIVE:
        raise tokens.TokenError("invalid")
    if _latest_request(conn, user) != data.get("r"):
        raise tokens.TokenError("invalid")  # an older request's link
    return user


def check_link(token: str) -> Outcome:
    try:
        with db.reading() as conn:
            _check(conn, token)
    except tokens.TokenError:
        return Outcome.error(INVALID)
    return Outcome(True, "privacy.deleteLink.confirmIntro")


def confirm(token: str) -> Outcome:
    due = clock.now() + timedelta(days=config().account_deletion_grace_days)

    def attempt() -> Outcome:
        with db.transaction() as conn:
            user = _check(conn, token)
            tokens.spend(conn, token, user.tenant_id, user.id)
            append_to(
                conn,
                user,
                NewEvent(
                    account_events.DELETION_REQUESTED,
                    {
                        "due_at": due.isoformat(),
                        "session_token": seal(conn, user, secrets.token_urlsafe(24)),
                        "via": "link",
                    },
                ),
                actor=ACTOR,
            )
            signins.end_all(conn, user.tenant_id, user.id)
            account_mails.record_deletion_requested(conn, user.tenant_id, user.id)
        return Outcome(True, "privacy.deleteLink.scheduled", {"due_at": due})

    try:
        return retry_on_conflict(attempt)
    except tokens.TokenError:
        return Outcome.error(INVALID)
