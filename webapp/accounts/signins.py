"""Sign-in and sessions: checking a password (and upgrading its hash), one
server-side row per browser that signed in, and ending sessions.

The browser holds a random secret (in its session cookie and, with "Remember
me", its remember cookie); the row holds only its sha256. A session is valid
while its row exists and has not expired, and the user's session token (rotated
by events) still matches. Signing out deletes this browser's row and nothing
else; "Sign out other sessions", a password change and a deletion request delete
every other row of the user; an email-change revert and erasure delete them all.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    delete,
    insert,
    or_,
    select,
    update,
)

from webapp.accounts import addresses, passwords
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.credentials import hasher
from webapp.accounts.result import Result
from webapp.accounts.stream import RowChange, append_to, change, unsealed
from webapp.accounts.tables import user_sessions, users
from webapp.accounts.users import SignIn, User, find_by_email, from_row, get_user
from webapp.core import clock, db
from webapp.core.driver_reads import DriverRead
from webapp.eventstore import Event, VersionConflict
from webapp.tenants import DEFAULT_TENANT

log = logging.getLogger(__name__)

LIFETIME = timedelta(days=30)  # as long as the remember-me cookie
# "Last active" moves at most this often per sign-in: not a write per request.
ACTIVE_EVERY = timedelta(minutes=1)

# What else a sign-in records in its own transaction, given the new row's
# digest: webapp/devices registers the device it came from and the new-device
# alert. Hooks may append to the user's stream: a concurrent change of the
# account runs the whole sign-in transaction once more.
SignInHook = Callable[[Connection, User, str], None]
_on_start: list[SignInHook] = []


def on_start(hook: SignInHook) -> None:
    if hook not in _on_start:
        _on_start.append(hook)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _of_user(tenant_id: str, user_id: str) -> ColumnElement[bool]:
    return and_(user_sessions.c.tenant_id == tenant_id, user_sessions.c.user_id == user_id)


def start(user: User) -> str:
    """Record a new sign-in of `user`; the secret for the browser to keep."""
    secret = secrets.token_urlsafe(32)
    now = clock.now()
    for attempt in range(3):
        try:
            with db.transaction() as conn:
                conn.execute(
                    delete(user_sessions).where(
                        _of_user(user.tenant_id, user.id),
                        user_sessions.c.expires_at <= now,
                    )
                )
                conn.execute(
                    insert(user_sessions).values(
                        digest=_digest(secret),
                        tenant_id=user.tenant_id,
                        user_id=user.id,
                        created_at=now,
                        expires_at=now + LIFETIME,
                        last_active_at=now,
                    )
                )
                for hook in _on_start:
                    hook(conn, user, _digest(secret))
            return secret
        except VersionConflict:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def digest_of(secret: str) -> str:
    """The row key of the sign-in whose browser holds `secret`."""
    return _digest(secret)


def keep_alive(user: User) -> User:
    """Move "last active" of the signed-in user's sign-in, once a minute at most
    (the session check read when it last moved); `user` as it is after that (its
    `sign_ins`, when read, show the move)."""
    now = clock.now()
    seen = user.sign_in_active_at
    if not user.sign_in or (seen is not None and now - seen < ACTIVE_EVERY):
        return user
    c = user_sessions.c
    with db.transaction() as conn:
        conn.execute(
            update(user_sessions)
            .where(
                c.digest == _digest(user.sign_in),
                or_(c.last_active_at.is_(None), c.last_active_at <= now - ACTIVE_EVERY),
            )
            .values(last_active_at=now)
        )
    if user.sign_ins is None:
        return user
    mine = _digest(user.sign_in)
    moved = tuple(
        dataclasses.replace(r, last_active_at=now) if r.digest == mine else r for r in user.sign_ins
    )
    return dataclasses.replace(user, sign_in_active_at=now, sign_ins=moved)


# The session check of every signed-in request, built once and sent on the
# driver's cursor (webapp/core/driver_reads.py): the user, if the browser's secret
# names a live sign-in of theirs (row there, not expired).
_u, _s = users, user_sessions
_LIVE_USER = DriverRead(
    select(_u, _s.c.last_active_at.label("sign_in_active_at"))
    .join(_s, and_(_s.c.tenant_id == _u.c.tenant_id, _s.c.user_id == _u.c.id))
    .where(
        _u.c.tenant_id == bindparam("tenant_id"),
        _u.c.id == bindparam("user_id"),
        _s.c.digest == bindparam("digest"),
        _s.c.expires_at > bindparam("now", type_=_s.c.expires_at.type),
    )
)


def live_user(user_id: str, secret: str, tenant_id: str = DEFAULT_TENANT) -> User | None:
    """The user, if `secret` names a live sign-in of theirs: one statement, on
    a pooled connection of its own."""
    params = {"tenant_id": tenant_id, "user_id": user_id, "digest": _digest(secret)}
    rows = _LIVE_USER.read({**params, "now": clock.now()})
    if not rows:
        return None
    r = rows[0]
    return dataclasses.replace(from_row(r), sign_in_active_at=r.sign_in_active_at)


# The same check for a page that lists the user's devices (Your devices): every
# live sign-in of the user, each row carrying the user's columns, in one
# statement; the session is live if one of the rows is this browser's.
_LIVE_USER_AND_SIGN_INS = DriverRead(
    select(
        _u,
        _s.c.digest.label("sign_in_digest"),
        _s.c.browser.label("sign_in_browser"),
        _s.c.system.label("sign_in_system"),
        _s.c.address.label("sign_in_address"),
        _s.c.created_at.label("sign_in_created_at"),
        _s.c.last_active_at.label("sign_in_last_active_at"),
    )
    .join(_s, and_(_s.c.tenant_id == _u.c.tenant_id, _s.c.user_id == _u.c.id))
    .where(
        _u.c.tenant_id == bindparam("tenant_id"),
        _u.c.id == bindparam("user_id"),
        _s.c.expires_at > bindparam("now", type_=_s.c.expires_at.type),
    )
    .order_by(_s.c.created_at.desc(), _s.c.digest)
)


def live_user_with_sign_ins(
    user_id: str, secret: str, tenant_id: str = DEFAULT_TENANT
) -> User | None:
    """`live_user`, plus every live sign-in of the user (`User.sign_ins`: digest,
    browser, system, address, created_at, last_active_at), in one statement."""
    params = {"tenant_id": tenant_id, "user_id": user_id, "now": clock.now()}
    rows = _LIVE_USER_AND_SIGN_INS.read(params)
    mine = _digest(secret)
    this = next((r for r in rows if r.sign_in_digest == mine), None)
    if this is None:
        return None
    sign_ins = tuple(
        SignIn(
            r.sign_in_digest,
            r.sign_in_browser,
            r.sign_in_system,
            r.sign_in_address,
            r.sign_in_created_at,
            r.sign_in_last_active_at,
        )
        for r in rows
    )
    return dataclasses.replace(
        from_row(this), sign_in_active_at=this.sign_in_last_active_at, sign_ins=sign_ins
    )


def end(user: User, secret: str) -> None:
    """Sign this browser out: its row goes, so no copy of its cookies works again."""
    with db.transaction() as conn:
        conn.execute(delete(user_sessions).where(user_sessions.c.digest == _digest(secret)))


def end_others(conn: Connection, user: User, keep: str) -> None:
    conn.execute(
        delete(user_sessions).where(
            _of_user(user.tenant_id, user.id),
            user_sessions.c.digest != _digest(keep),
        )
    )


def end_all(conn: Connection, tenant_id: str, user_id: str) -> None:
    conn.execute(delete(user_sessions).where(_of_user(tenant_id, user_id)))


def purge_expired(tenant_id: str, now: datetime) -> int:
    with db.transaction() as conn:
        result = conn.execute(
            delete(user_sessions).where(
                user_sessions.c.tenant_id == tenant_id, user_sessions.c.expires_at <= now
            )
        )
    return int(result.rowcount or 0)


# --- checking the password -------------------------------------------------------
_DUMMY_HASH: dict[tuple[int, int, int], str] = {}


def authenticate(email_raw: str, password: str) -> User | None:
    """The user when the address and password match, else None (same cost either way)."""
    ph = hasher()
    email = addresses.normalize(email_raw)
    with db.reading() as conn:
        user = find_by_email(conn, email) if email else None
    # No account, or one made through an identity provider without a password:
    # the same hash's cost either way, so the time tells nobody which.
    if user is None or not user.password_hash:
        params = (ph.time_cost, ph.memory_cost, ph.parallelism)
        if params not in _DUMMY_HASH:
            _DUMMY_HASH[params] = ph.hash(secrets.token_urlsafe(16))
        passwords.verify_password(ph, _DUMMY_HASH[params], password)
        return None
    if not passwords.verify_password(ph, user.password_hash, password):
        return None
    if passwords.needs_rehash(ph, user.password_hash):
        try:
            with db.transaction() as conn:
                now = get_user(conn, user.id)
                decision = Account(now).rehash_password(ph.hash(password))
                if now is not None and not isinstance(decision, Refusal):
                    append_to(conn, now, decision)
        except VersionConflict:
            log.info("rehash skipped: concurrent change", extra={"user": user.id})
        with db.reading() as conn:
            user = get_user(conn, user.id) or user
    return user


def refusal(user: User) -> Refusal | None:
    """Why `user` (the right password given) may not sign in now, if so."""
    return Account(user).sign_in()


# --- ending sessions ----------------------------------------------------------------
def revoke_other_sessions(user: User) -> Result:
    """*Sign out other sessions*: a new session token; this browser stays."""
    token = secrets.token_urlsafe(24)

    return change(
        user,
        lambda account: account.revoke_other_sessions(token),
        Result(True, "profile.account.sessionsRevoked", session_token=token),
        lambda conn, row: end_others(conn, row, keep=user.sign_in),
    )


def _token_row(conn: Connection, e: Event) -> dict[str, Any]:
    return {"session_token": unsealed(conn, e, "session_token")}


ROW_CHANGES: dict[str, RowChange] = {
    ev.SESSIONS_REVOKED: _token_row,
    ev.PASSWORD_REHASHED: lambda conn, e: {"password_hash": unsealed(conn, e, "password_hash")},
}
