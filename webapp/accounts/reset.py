""" "Forgot password?": ask for a reset link by address, then set a new password
with it. The request always answers the same (no enumeration); the reset ends
every session and mails a "password changed" notice, in one transaction.

Reset links: single use, valid 1 hour, bound to the password hash and to the
latest request. Asking appends `user.password-reset-requested`; the token names
that event's version and a digest of the current password hash, so a changed
password or a newer request voids it, and using it records it as spent.
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection

from webapp.accounts import addresses, change_password, notices, passwords, signed_links, signins
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.change_password import record_password_changed
from webapp.accounts.credentials import check_new_password, config, hasher
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import RowChange, append_to
from webapp.accounts.users import User, address_version, find_by_email, get_user, stream_of
from webapp.core import db
from webapp.eventstore import VersionConflict, read_stream

SENT = "reset.sent"
INVALID = "reset.errors.invalid"
PASSWORD_RESET = "password-reset"  # outbox kind of the mail with the link


def request_reset(email_raw: str) -> Result:
    """Record a reset link for the address's account, if there is one. The
    answer is the same either way."""
    email = addresses.normalize(email_raw)
    if email is None:
        return Result.error("auth.errors.invalidEmail", "email")
    try:
        with db.transaction() as conn:
            user = find_by_email(conn, email)
            if user is not None:
                token = issue(conn, user, actor="anonymous:reset-request")
                record_password_reset(conn, user, token)
    except VersionConflict:
        pass  # a concurrent change of the account: the user can ask again
    return Result(True, SENT)


def check_reset(token: str) -> Result:
    """Whether the link is usable; if so, `params["email"]` is its account's
    address (the password policy refuses passwords built on it)."""
    try:
        with db.reading() as conn:
            user = check(conn, token)
    except signed_links.TokenError:
        return Result.error(INVALID)
    return Result(True, "reset.choose", {"email": user.email})


def reset_password(token: str, new: str, confirm: str) -> Result:
    """Set the password from a reset link: the link is spent, every session
    ends, the address counts as verified (the link reached it), and the
    "password changed" notice is recorded."""
    try:
        with db.reading() as conn:
            user = check(conn, token)
    except signed_links.TokenError:
        return Result.error(INVALID)
    if new != confirm:
        return Result.error("profile.password.mismatch", "confirm_password")
    problem = check_new_password(user.email, new, user.password_hash)
    if problem:
        return problem
    new_hash = passwords.hash_password(hasher(), new)
    try:
        return retry_on_conflict(lambda: _reset(token, new_hash))
    except signed_links.TokenError:
        return Result.error(INVALID)


def _reset(token: str, new_hash: str) -> Result:
    """One attempt, in one transaction (the token is checked again inside it)."""
    with db.transaction() as conn:
        user = check(conn, token)
        decision = Account(user).reset_password(
            new_hash, secrets.token_urlsafe(24), address_version(conn, user)
        )
        if isinstance(decision, Refusal):
            return Result.refused(decision)
        signed_links.spend(conn, token, user.tenant_id, user.id)
        append_to(conn, user, decision, actor="password-reset-link")
        signins.end_all(conn, user.tenant_id, user.id)
        record_password_changed(conn, user.tenant_id, user.id)
    return Result(True, "reset.success")


# --- the link --------------------------------------------------------------------
def _hash_digest(user: User) -> str:
    return signed_links.digest(user.password_hash)[:32]


def issue(conn: Connection, user: User, actor: str | None = None) -> str:
    """Record a reset request for `user` (the row as `conn` sees it) and return
    its token; every earlier reset link of the user is void from now on."""
    decision = Account(user).request_reset()
    if isinstance(decision, Refusal):
        raise LookupError(decision.key)
    (requested,) = append_to(conn, user, decision, actor=actor)
    return signed_links.make(
        config().secret_key,
        signed_links.RESET_PASSWORD,
        {"u": user.id, "h": _hash_digest(user), "v": requested.version},
    )


def _latest_request(conn: Connection, user: User) -> int | None:
    versions = [
        e.version
        for e in read_stream(conn, stream_of(user.tenant_id, user.id))
        if e.type == ev.PASSWORD_RESET_REQUESTED
    ]
    return max(versions, default=None)


def check(conn: Connection, token: str) -> User:
    """The user the link is for; `signed_links.TokenError` when it is expired,
    used, altered, superseded by a newer request or the password changed since."""
    data = signed_links.load(config().secret_key, signed_links.RESET_PASSWORD, token)
    if signed_links.is_spent(conn, token):
        raise signed_links.TokenError("used")
    user = get_user(conn, str(data.get("u", "")))
    if user is None or data.get("h") != _hash_digest(user):
        raise signed_links.TokenError("invalid")
    if not isinstance(data.get("v"), int) or _latest_request(conn, user) != data["v"]:
        raise signed_links.TokenError("invalid")
    return user


# --- mails -----------------------------------------------------------------------
def record_password_reset(conn: Connection, user: User, token: str) -> None:
    notices.record(
        conn,
        user,
        PASSWORD_RESET,
        "mail.passwordReset",
        f"/reset-password/{token}",
        duration=signed_links.LIFETIMES[signed_links.RESET_PASSWORD],
    )


ROW_CHANGES: dict[str, RowChange] = {ev.PASSWORD_RESET: change_password.changed_row}
