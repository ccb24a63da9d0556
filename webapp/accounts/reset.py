""" "Forgot password?": ask for a reset link by address, then set a new password
with it. The request always answers the same (no enumeration); the reset ends
every session and mails a "password changed" notice, in one transaction."""

from __future__ import annotations

import secrets

from webapp import db
from webapp.accounts import emails, mails, passwords, reset_tokens, signins, tokens
from webapp.accounts import events as ev
from webapp.accounts.commands import (
    Outcome,
    append_to,
    check_new_password,
    hasher,
    retry_on_conflict,
    seal,
)
from webapp.accounts.users import address_version, find_by_email
from webapp.eventstore import NewEvent, VersionConflict

SENT = "reset.sent"
INVALID = "reset.errors.invalid"


def request_reset(email_raw: str) -> Outcome:
    """Record a reset link for the address's account, if there is one. The
    answer is the same either way."""
    email = emails.normalize(email_raw)
    if email is None:
        return Outcome.error("auth.errors.invalidEmail", "email")
    try:
        with db.transaction() as conn:
            user = find_by_email(conn, email)
            if user is not None:
                token = reset_tokens.issue(conn, user, actor="anonymous:reset-request")
                mails.record_password_reset(conn, user, token)
    except VersionConflict:
        pass  # a concurrent change of the account: the user can ask again
    return Outcome(True, SENT)


def check_reset(token: str) -> Outcome:
    """Whether the link is usable; if so, `params["email"]` is its account's
    address (the password policy refuses passwords built on it)."""
    try:
        with db.reading() as conn:
            user = reset_tokens.check(conn, token)
    except tokens.TokenError:
        return Outcome.error(INVALID)
    return Outcome(True, "reset.choose", {"email": user.email})


def reset_password(token: str, new: str, confirm: str) -> Outcome:
    """Set the password from a reset link: the link is spent, every session
    ends, the address counts as verified (the link reached it), and the
    "password changed" notice is recorded."""
    try:
        with db.reading() as conn:
            user = reset_tokens.check(conn, token)
    except tokens.TokenError:
        return Outcome.error(INVALID)
    if new != confirm:
        return Outcome.error("profile.password.mismatch", "confirm_password")
    problem = check_new_password(user.email, new, user.password_hash)
    if problem:
        return problem
    new_hash = passwords.hash_password(hasher(), new)
    try:
        return retry_on_conflict(lambda: _reset(token, new_hash))
    except tokens.TokenError:
        return Outcome.error(INVALID)


def _reset(token: str, new_hash: str) -> Outcome:
    """One attempt, in one transaction (the token is checked again inside it)."""
    with db.transaction() as conn:
        user = reset_tokens.check(conn, token)
        tokens.spend(conn, token, user.tenant_id, user.id)
        changes = [
            NewEvent(
                ev.PASSWORD_RESET,
                {
                    "password_hash": seal(conn, user, new_hash),
                    "session_token": seal(conn, user, secrets.token_urlsafe(24)),
                },
            )
        ]
        if not user.email_verified:
            changes.append(
                NewEvent(
                    ev.EMAIL_VERIFIED,
                    {
                        "email": seal(conn, user, user.email),
                        "user_id": user.id,
                        "address_version": address_version(conn, user),
                    },
                )
            )
        append_to(conn, user, *changes, actor="password-reset-link")
        signins.end_all(conn, user.tenant_id, user.id)
        mails.record_password_changed(conn, user.tenant_id, user.id)
    return Outcome(True, "reset.success")
