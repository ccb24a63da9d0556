"""Server-side sign-ins: one row per browser that signed in.

The browser holds a random secret (in its session cookie and, with "Remember
me", its remember cookie); the row holds only its sha256. A session is valid
while its row exists and has not expired, and the user's session token (rotated
by events) still matches. Signing out deletes this browser's row and nothing
else; "Sign out other sessions", a password change and a deletion request delete
every other row of the user; an email-change revert and erasure delete them all.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, and_, bindparam, delete, insert, select

from webapp import clock, db
from webapp.accounts.tables import user_sessions, users
from webapp.accounts.users import User, from_row
from webapp.tenants import DEFAULT_TENANT

LIFETIME = timedelta(days=30)  # as long as the remember-me cookie


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _of_user(tenant_id: str, user_id: str) -> ColumnElement[bool]:
    return and_(user_sessions.c.tenant_id == tenant_id, user_sessions.c.user_id == user_id)


def start(user: User) -> str:
    """Record a new sign-in of `user`; the secret for the browser to keep."""
    secret = secrets.token_urlsafe(32)
    now = clock.now()
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
            )
        )
    return secret


# The session check of every signed-in request, built once: the user, if the
# browser's secret names a live sign-in of theirs (row there, not expired).
_u, _s = users, user_sessions
_LIVE_USER = (
    select(_u)
    .join(_s, and_(_s.c.tenant_id == _u.c.tenant_id, _s.c.user_id == _u.c.id))
    .where(
        _u.c.tenant_id == bindparam("tenant_id"),
        _u.c.id == bindparam("user_id"),
        _s.c.digest == bindparam("digest"),
        _s.c.expires_at > bindparam("now", type_=_s.c.expires_at.type),
    )
)


def live_user(
    conn: Connection, user_id: str, secret: str, tenant_id: str = DEFAULT_TENANT
) -> User | None:
    """The user, if `secret` names a live sign-in of theirs: one statement."""
    params = {"tenant_id": tenant_id, "user_id": user_id, "digest": _digest(secret)}
    r = conn.execute(_LIVE_USER, {**params, "now": clock.now()}).first()
    return from_row(r) if r else None


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
