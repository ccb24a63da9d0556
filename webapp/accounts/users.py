"""The user read model: the `User` record, lookups by id and by address, and the
version of the event that set the current address."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from webapp.accounts import events as ev
from webapp.accounts.tables import users
from webapp.eventstore import StreamId, read_stream
from webapp.tenants import DEFAULT_TENANT


@dataclass(frozen=True)
class SignIn:
    """One live sign-in (a `user_sessions` row) of a user, as Your devices lists it."""

    digest: str
    browser: str | None
    system: str | None
    address: str | None
    created_at: datetime
    last_active_at: datetime | None


@dataclass(frozen=True)
class User:
    tenant_id: str
    id: str
    email: str
    email_verified: bool
    password_hash: str
    session_token: str
    language: str | None
    status: str
    deletion_due_at: datetime | None
    created_at: datetime
    version: int
    is_admin: bool = False  # may enter the operations console (webapp/admin)
    totp_since: datetime | None = None  # the authenticator app is on (accounts/factors)
    recovery_codes_left: int = 0
    passkeys: int = 0  # how many (the list is read only when there are some)
    identities: int = 0  # linked at sign-in providers (accounts/identities), likewise
    # The browser's sign-in (signins.py), set only on the signed-in user.
    sign_in: str = field(default="", repr=False, compare=False)
    # When that sign-in was last active (moved at most once a minute: `signins.keep_alive`).
    sign_in_active_at: datetime | None = field(default=None, repr=False, compare=False)
    # Every live sign-in of the user, when the session check read them with the
    # user (a page listing the devices); None: not read, ask the database.
    sign_ins: tuple[SignIn, ...] | None = field(default=None, repr=False, compare=False)

    # Flask-Login: the id is `<user id>:<session token>:<sign-in secret>`.
    # Rotating the session token ends every session (and remember-me cookie)
    # that carries the old one; deleting a sign-in row ends that one session.
    is_authenticated = True
    is_active = True
    is_anonymous = False

    def get_id(self) -> str:
        return f"{self.id}:{self.session_token}:{self.sign_in}"

    @property
    def deletion_requested(self) -> bool:
        return self.status == ev.DELETION_REQUESTED_STATUS


def stream_of(tenant_id: str, user_id: str) -> StreamId:
    return StreamId(tenant_id, ev.AGGREGATE, user_id)


def from_row(r: Any) -> User:
    """A `User` from a row with the `users` table's columns."""
    return User(
        tenant_id=r.tenant_id,
        id=r.id,
        email=r.email,
        email_verified=bool(r.email_verified),
        password_hash=r.password_hash,
        session_token=r.session_token,
        language=r.language,
        status=r.status,
        deletion_due_at=r.deletion_due_at,
        created_at=r.created_at,
        version=r.version,
        is_admin=bool(r.is_admin),
        totp_since=r.totp_since,
        recovery_codes_left=int(r.recovery_codes_left or 0),
        passkeys=int(r.passkeys or 0),
        identities=int(r.identities or 0),
    )


def get_user(conn: Connection, user_id: str, tenant_id: str = DEFAULT_TENANT) -> User | None:
    r = conn.execute(
        select(users).where(users.c.tenant_id == tenant_id, users.c.id == user_id)
    ).first()
    return from_row(r) if r else None


def find_by_email(conn: Connection, email: str, tenant_id: str = DEFAULT_TENANT) -> User | None:
    r = conn.execute(
        select(users).where(users.c.tenant_id == tenant_id, users.c.email == email)
    ).first()
    return from_row(r) if r else None


def address_version(conn: Connection, user: User) -> int:
    """The version of the event that set the user's current address."""
    setters = (ev.REGISTERED, ev.EMAIL_CHANGED, ev.EMAIL_CHANGE_REVERTED)
    stream = read_stream(conn, stream_of(user.tenant_id, user.id))
    return max((e.version for e in stream if e.type in setters), default=0)
