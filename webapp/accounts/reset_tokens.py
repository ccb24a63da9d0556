"""Password-reset links: single use, valid 1 hour, bound to the password hash
and to the latest reset request.

Asking for a link appends `user.password-reset-requested`; the token names
that event's version and a digest of the current password hash, so a changed
password or a newer request voids it, and using it records it as spent.
"""

from __future__ import annotations

from sqlalchemy import Connection

from webapp.accounts import events as ev
from webapp.accounts import tokens
from webapp.accounts.commands import append_to, config
from webapp.accounts.users import User, get_user, stream_of
from webapp.eventstore import NewEvent, read_stream


def _hash_digest(user: User) -> str:
    return tokens.digest(user.password_hash)[:32]


def issue(conn: Connection, user: User, actor: str | None = None) -> str:
    """Record a reset request for `user` (the row as `conn` sees it) and return
    its token; every earlier reset link of the user is void from now on."""
    append_to(conn, user, NewEvent(ev.PASSWORD_RESET_REQUESTED, {}), actor=actor)
    return tokens.make(
        config().secret_key,
        tokens.RESET_PASSWORD,
        {"u": user.id, "h": _hash_digest(user), "v": user.version + 1},
    )


def _latest_request(conn: Connection, user: User) -> int | None:
    versions = [
        e.version
        for e in read_stream(conn, stream_of(user.tenant_id, user.id))
        if e.type == ev.PASSWORD_RESET_REQUESTED
    ]
    return max(versions, default=None)


def check(conn: Connection, token: str) -> User:
    """The user the link is for; `tokens.TokenError` when it is expired, used,
    altered, superseded by a newer request or the password changed since."""
    data = tokens.load(config().secret_key, tokens.RESET_PASSWORD, token)
    if tokens.is_spent(conn, token):
        raise tokens.TokenError("used")
    user = get_user(conn, str(data.get("u", "")))
    if user is None or data.get("h") != _hash_digest(user):
        raise tokens.TokenError("invalid")
    if not isinstance(data.get("v"), int) or _latest_request(conn, user) != data["v"]:
        raise tokens.TokenError("invalid")
    return user
