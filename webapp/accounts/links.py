"""The links in account mails: verify an address, revert an email change.

GET only checks a link (`check_*`); the POST behind the page's button spends it.
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection

from webapp import db
from webapp.accounts import crypto, signins, tokens
from webapp.accounts import events as ev
from webapp.accounts.commands import Outcome, append_to, config, retry_on_conflict, seal
from webapp.accounts.users import User, address_version, find_by_email, get_user, stream_of
from webapp.eventstore import NewEvent, read_stream


def verification_token(user: User) -> str:
    return tokens.make(
        config().secret_key, tokens.VERIFY_EMAIL, {"u": user.id, "e": tokens.digest(user.email)}
    )


def _check_verify(conn: Connection, token: str) -> User:
    data = tokens.load(config().secret_key, tokens.VERIFY_EMAIL, token)
    user = get_user(conn, str(data.get("u", "")))
    if tokens.is_spent(conn, token):
        raise tokens.TokenError("used")
    if user is None or tokens.digest(user.email) != data.get("e"):
        # Erased account, or the address changed since: this link is void.
        raise tokens.TokenError("invalid")
    if user.email_verified:
        raise tokens.TokenError("used")
    return user


def check_verification(token: str) -> Outcome:
    try:
        with db.reading() as conn:
            _check_verify(conn, token)
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
    return Outcome(True, "verify.confirm")


def verify_email(token: str) -> Outcome:
    def attempt() -> Outcome:
        with db.transaction() as conn:
            user = _check_verify(conn, token)
            tokens.spend(conn, token, user.tenant_id, user.id)
            append_to(
                conn,
                user,
                NewEvent(
                    ev.EMAIL_VERIFIED,
                    {
                        "email": seal(conn, user, user.email),
                        # ids only, so a waiting workflow can match user + address
                        "user_id": user.id,
                        "address_version": address_version(conn, user),
                    },
                ),
            )
        return Outcome(True, "verify.success")

    try:
        return retry_on_conflict(attempt)
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")


def revert_token(user_id: str, version: int) -> str:
    return tokens.make(config().secret_key, tokens.REVERT_EMAIL, {"u": user_id, "v": version})


def _check_revert(conn: Connection, token: str) -> tuple[User, str, int]:
    data = tokens.load(config().secret_key, tokens.REVERT_EMAIL, token)
    user = get_user(conn, str(data.get("u", "")))
    if tokens.is_spent(conn, token):
        raise tokens.TokenError("used")
    if user is None or not isinstance(data.get("v"), int):
        raise tokens.TokenError("invalid")
    change = next(
        (
            e
            for e in read_stream(conn, stream_of(user.tenant_id, user.id), data["v"] - 1)
            if e.version == data["v"]
        ),
        None,
    )
    if change is None or change.type != ev.EMAIL_CHANGED:
        raise tokens.TokenError("invalid")
    previous = crypto.unseal_for(conn, user.tenant_id, user.id, change.payload["previous_email"])
    if previous == user.email:
        raise tokens.TokenError("used")
    return user, previous, change.version


def check_revert(token: str) -> Outcome:
    try:
        with db.reading() as conn:
            _user, previous, _version = _check_revert(conn, token)
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
    return Outcome(True, "revert.confirm", {"email": previous})


def revert_email_change(token: str) -> Outcome:
    """Restore the address from before the change, verified (the link proved it),
    and end every session: whoever made the change is signed out."""

    def attempt() -> Outcome:
        with db.transaction() as conn:
            user, previous, version = _check_revert(conn, token)
            taken = find_by_email(conn, previous)
            if taken is not None and taken.id != user.id:
                return Outcome.error("revert.errors.taken")
            tokens.spend(conn, token, user.tenant_id, user.id)
            append_to(
                conn,
                user,
                NewEvent(
                    ev.EMAIL_CHANGE_REVERTED,
                    {
                        "email": seal(conn, user, previous),
                        "session_token": seal(conn, user, secrets.token_urlsafe(24)),
                        "reverted_version": version,
                    },
                ),
                actor="email-revert-link",
            )
            signins.end_all(conn, user.tenant_id, user.id)
        return Outcome(True, "revert.success", {"email": previous})

    try:
        return retry_on_conflict(attempt)
    except tokens.TokenError as e:
        return Outcome.error(f"verify.errors.{e.reason}")
