"""Reading the factor tables, and the writes that are no event: a set-up not
yet confirmed, and the time-step of the last accepted code."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from webapp.accounts.factors.tables import TOTP, recovery_codes, user_factors
from webapp.accounts.users import User
from webapp.core import clock


@dataclass(frozen=True)
class Factor:
    id: str
    kind: str
    name: str
    secret: str  # sealed (enc:v1:...)
    created_at: datetime
    confirmed_at: datetime | None
    last_used_at: datetime | None
    last_step: int | None


def _of(tenant_id: str, user_id: str) -> tuple[Any, ...]:
    return (user_factors.c.tenant_id == tenant_id, user_factors.c.user_id == user_id)


def _factor(r: Any) -> Factor:
    return Factor(
        r.id, r.kind, r.name, r.secret, r.created_at, r.confirmed_at, r.last_used_at, r.last_step
    )


def factors_of(conn: Connection, user: User) -> list[Factor]:
    """The confirmed factors, oldest first."""
    rows = conn.execute(
        select(user_factors)
        .where(*_of(user.tenant_id, user.id), user_factors.c.confirmed_at.is_not(None))
        .order_by(user_factors.c.created_at)
    )
    return [_factor(r) for r in rows]


def totp_of(conn: Connection, user: User) -> Factor | None:
    return next((f for f in factors_of(conn, user) if f.kind == TOTP), None)


def pending_totp(conn: Connection, user: User) -> Factor | None:
    r = conn.execute(
        select(user_factors).where(
            *_of(user.tenant_id, user.id),
            user_factors.c.kind == TOTP,
            user_factors.c.confirmed_at.is_(None),
        )
    ).first()
    return _factor(r) if r else None


def has_second_factor(conn: Connection, tenant_id: str, user_id: str) -> bool:
    found = conn.execute(
        select(user_factors.c.id)
        .where(*_of(tenant_id, user_id), user_factors.c.confirmed_at.is_not(None))
        .limit(1)
    ).first()
    return found is not None


def start_setup(conn: Connection, user: User, sealed_secret: str, name: str) -> str:
    """A new set-up (replacing one not confirmed): its id."""
    conn.execute(
        delete(user_factors).where(
            *_of(user.tenant_id, user.id),
            user_factors.c.kind == TOTP,
            user_factors.c.confirmed_at.is_(None),
        )
    )
    factor_id = str(uuid.uuid4())
    conn.execute(
        insert(user_factors).values(
            id=factor_id,
            tenant_id=user.tenant_id,
            user_id=user.id,
            kind=TOTP,
            name=name,
            secret=sealed_secret,
            created_at=clock.now(),
        )
    )
    return factor_id


def accept_step(conn: Connection, factor_id: str, step: int) -> bool:
    """Record `step` as the last accepted one, unless that step (or a later
    one) was accepted already: one conditional UPDATE, so two requests with
    the same code cannot both pass."""
    result = conn.execute(
        update(user_factors)
        .where(
            user_factors.c.id == factor_id,
            or_(user_factors.c.last_step.is_(None), user_factors.c.last_step < step),
        )
        .values(last_step=step, last_used_at=clock.now())
    )
    return bool(result.rowcount)


@dataclass(frozen=True)
class Code:
    batch: str
    number: int
    code_hash: str


def unused_codes(conn: Connection, user: User) -> list[Code]:
    c = recovery_codes.c
    rows = conn.execute(
        select(c.batch, c.number, c.code_hash)
        .where(c.tenant_id == user.tenant_id, c.user_id == user.id, c.used_at.is_(None))
        .order_by(c.number)
    )
    return [Code(r.batch, r.number, r.code_hash) for r in rows]


def codes_left(conn: Connection, user: User) -> int:
    c = recovery_codes.c
    return int(
        conn.execute(
            select(func.count()).where(
                c.tenant_id == user.tenant_id, c.user_id == user.id, c.used_at.is_(None)
            )
        ).scalar_one()
    )


def codes_created_at(conn: Connection, user: User) -> datetime | None:
    c = recovery_codes.c
    return conn.execute(  # type: ignore[no-any-return]
        select(func.max(c.created_at)).where(c.tenant_id == user.tenant_id, c.user_id == user.id)
    ).scalar()


def delete_all(conn: Connection, tenant_id: str, user_id: str) -> None:
    """Every factor and recovery code of the user (reset, erasure)."""
    conn.execute(delete(user_factors).where(*_of(tenant_id, user_id)))
    conn.execute(
        delete(recovery_codes).where(
            recovery_codes.c.tenant_id == tenant_id, recovery_codes.c.user_id == user_id
        )
    )
