"""The browsers an account has signed in from (`known_devices`): recognised by
the device cookie's id (its sha256 is the key), remembered at each sign-in,
forgotten when the account is erased (an inline projection of `user.erased`,
in the erasure's own transaction)."""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, and_, delete, exists, select, update
from sqlalchemy.dialects import postgresql, sqlite

from webapp.accounts import events as ev
from webapp.accounts.users import User
from webapp.devices.tables import known_devices
from webapp.eventstore import Event, register_inline

_k = known_devices.c


def digest(device_id: str) -> str:
    return hashlib.sha256(device_id.encode()).hexdigest()


def _of(tenant_id: str, user_id: str) -> ColumnElement[bool]:
    return and_(_k.tenant_id == tenant_id, _k.user_id == user_id)


def any_known(conn: Connection, user: User) -> bool:
    """Whether the account has signed in anywhere before (not so: its first sign-in)."""
    return bool(conn.execute(select(exists().where(_of(user.tenant_id, user.id)))).scalar())


def knows(conn: Connection, user: User, device_digest: str) -> bool:
    query = select(exists().where(_of(user.tenant_id, user.id), _k.digest == device_digest))
    return bool(conn.execute(query).scalar())


def remember(conn: Connection, user: User, device_digest: str, now: datetime) -> None:
    """Known from now on (two sign-ins at once from one browser: one row)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(
        dialect.insert(known_devices)
        .values(
            tenant_id=user.tenant_id,
            user_id=user.id,
            digest=device_digest,
            first_seen_at=now,
            last_seen_at=now,
        )
        .on_conflict_do_nothing()
    )
    conn.execute(
        update(known_devices)
        .where(_of(user.tenant_id, user.id), _k.digest == device_digest)
        .values(last_seen_at=now)
    )


def of_user(conn: Connection, user: User) -> list[dict[str, str]]:
    """For the data export: when each browser was first and last seen (no id)."""
    rows = conn.execute(
        select(_k.first_seen_at, _k.last_seen_at)
        .where(_of(user.tenant_id, user.id))
        .order_by(_k.first_seen_at)
    )
    return [
        {
            "first_signed_in_at": r.first_seen_at.isoformat(),
            "last_signed_in_at": r.last_seen_at.isoformat(),
        }
        for r in rows
    ]


def forget(conn: Connection, e: Event) -> None:
    conn.execute(delete(known_devices).where(_of(e.tenant_id, e.aggregate_id)))


def register() -> None:
    register_inline(ev.ERASED, forget)
