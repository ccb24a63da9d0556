"""Reading an account's linked identities, finding the account an identity
belongs to, and the one write that is no event: when it was last used."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update

from webapp.accounts.identities.tables import user_identities
from webapp.core import clock

c = user_identities.c


@dataclass(frozen=True)
class Identity:
    id: str
    tenant_id: str
    user_id: str
    provider: str
    subject: str
    email: str | None
    linked_at: datetime
    last_used_at: datetime | None


def _identity(r: Any) -> Identity:
    return Identity(
        *(r.id, r.tenant_id, r.user_id, r.provider, r.subject, r.email),
        *(r.linked_at, r.last_used_at),
    )


def identities_of(conn: Connection, tenant_id: str, user_id: str) -> list[Identity]:
    """Oldest first."""
    rows = conn.execute(
        select(user_identities)
        .where(c.tenant_id == tenant_id, c.user_id == user_id)
        .order_by(c.linked_at, c.id)
    )
    return [_identity(r) for r in rows]


def by_subject(conn: Connection, tenant_id: str, provider: str, subject: str) -> Identity | None:
    r = conn.execute(
        select(user_identities).where(
            c.tenant_id == tenant_id, c.provider == provider, c.subject == subject
        )
    ).first()
    return _identity(r) if r else None


def record_use(conn: Connection, identity: Identity) -> None:
    conn.execute(
        update(user_identities).where(c.id == identity.id).values(last_used_at=clock.now())
    )


def delete_all(conn: Connection, tenant_id: str, user_id: str) -> None:
    conn.execute(delete(user_identities).where(c.tenant_id == tenant_id, c.user_id == user_id))
