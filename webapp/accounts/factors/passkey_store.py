"""Reading an account's passkeys (rows of `user_factors` of kind PASSKEY), and
the one write that is no event: a sign-in's new sign count and time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from webapp.accounts.factors.tables import PASSKEY, user_factors
from webapp.accounts.users import User
from webapp.core import clock

c = user_factors.c


@dataclass(frozen=True)
class Passkey:
    id: str
    tenant_id: str
    user_id: str
    name: str
    credential_id: str
    public_key: str
    sign_count: int
    user_handle: str
    created_at: datetime
    last_used_at: datetime | None


def _passkey(r: Any) -> Passkey:
    return Passkey(
        *(r.id, r.tenant_id, r.user_id, r.name, r.credential_id, r.public_key),
        *(int(r.sign_count or 0), r.user_handle, r.created_at, r.last_used_at),
    )


def passkeys_of(conn: Connection, user: User) -> list[Passkey]:
    """Oldest first."""
    rows = conn.execute(
        select(user_factors)
        .where(c.tenant_id == user.tenant_id, c.user_id == user.id, c.kind == PASSKEY)
        .order_by(c.created_at, c.id)
    )
    return [_passkey(r) for r in rows]


def by_credential(conn: Connection, credential_id: str) -> Passkey | None:
    if len(credential_id) > 1400:
        return None
    r = conn.execute(
        select(user_factors).where(c.credential_id == credential_id, c.kind == PASSKEY)
    ).first()
    return _passkey(r) if r else None


def record_use(conn: Connection, passkey: Passkey, new_count: int) -> bool:
    """Store the new sign count, unless another sign-in moved it meanwhile:
    one conditional UPDATE, so two answers signed with one count cannot both pass."""
    result = conn.execute(
        update(user_factors)
        .where(c.id == passkey.id, c.sign_count == passkey.sign_count)
        .values(sign_count=new_count, last_used_at=clock.now())
    )
    return bool(result.rowcount)
