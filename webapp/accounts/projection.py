"""Inline projections: the `users` read model, updated in the append's transaction
so the very next page render sees the change."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, update

from webapp.accounts import events as ev
from webapp.accounts.crypto import unseal_for
from webapp.accounts.tables import users
from webapp.eventstore import Event, register_inline


def _open(conn: Connection, e: Event, field: str) -> str:
    return unseal_for(conn, e.tenant_id, e.aggregate_id, e.payload[field])


def _update(conn: Connection, e: Event, **values: Any) -> None:
    conn.execute(
        update(users)
        .where(users.c.tenant_id == e.tenant_id, users.c.id == e.aggregate_id)
        .values(version=e.version, **values)
    )


def on_registered(conn: Connection, e: Event) -> None:
    conn.execute(
        insert(users).values(
            tenant_id=e.tenant_id,
            id=e.aggregate_id,
            email=_open(conn, e, "email"),
            email_verified=False,
            password_hash=_open(conn, e, "password_hash"),
            session_token=_open(conn, e, "session_token"),
            language=e.payload.get("language"),
            status=ev.ACTIVE,
            deletion_due_at=None,
            created_at=e.recorded_at,
            version=e.version,
        )
    )


def on_email_changed(conn: Connection, e: Event) -> None:
    _update(conn, e, email=_open(conn, e, "email"), email_verified=False)


def on_email_verified(conn: Connection, e: Event) -> None:
    _update(conn, e, email_verified=True)


def on_email_change_reverted(conn: Connection, e: Event) -> None:
    _update(
        conn,
        e,
        email=_open(conn, e, "email"),
        email_verified=True,
        session_token=_open(conn, e, "session_token"),
    )


def on_password_changed(conn: Connection, e: Event) -> None:
    _update(
        conn,
        e,
        password_hash=_open(conn, e, "password_hash"),
        session_token=_open(conn, e, "session_token"),
    )


def on_password_rehashed(conn: Connection, e: Event) -> None:
    _update(conn, e, password_hash=_open(conn, e, "password_hash"))


def on_language_changed(conn: Connection, e: Event) -> None:
    _update(conn, e, language=e.payload.get("language"))


def on_sessions_revoked(conn: Connection, e: Event) -> None:
    _update(conn, e, session_token=_open(conn, e, "session_token"))


def on_deletion_requested(conn: Connection, e: Event) -> None:
    due = datetime.fromisoformat(e.payload["due_at"])
    # The request also ends every other session (a new token; older events lack it).
    token = (
        {"session_token": _open(conn, e, "session_token")} if "session_token" in e.payload else {}
    )
    _update(conn, e, status=ev.DELETION_REQUESTED_STATUS, deletion_due_at=due, **token)


def on_deletion_cancelled(conn: Connection, e: Event) -> None:
    _update(conn, e, status=ev.ACTIVE, deletion_due_at=None)


def on_erased(conn: Connection, e: Event) -> None:
    conn.execute(
        delete(users).where(users.c.tenant_id == e.tenant_id, users.c.id == e.aggregate_id)
    )


def register() -> None:
    for event_type, handler in {
        ev.REGISTERED: on_registered,
        ev.EMAIL_CHANGED: on_email_changed,
        ev.EMAIL_VERIFIED: on_email_verified,
        ev.EMAIL_CHANGE_REVERTED: on_email_change_reverted,
        ev.PASSWORD_CHANGED: on_password_changed,
        ev.PASSWORD_REHASHED: on_password_rehashed,
        ev.LANGUAGE_CHANGED: on_language_changed,
        ev.SESSIONS_REVOKED: on_sessions_revoked,
        ev.DELETION_REQUESTED: on_deletion_requested,
        ev.DELETION_CANCELLED: on_deletion_cancelled,
        ev.ERASED: on_erased,
    }.items():
        register_inline(event_type, handler)
