"""Tenants: every event and read-model row carries a tenant id."""

from __future__ import annotations

import re

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from webapp.core import clock
from webapp.eventstore.tables import tenants

DEFAULT_TENANT = "default"
_SLUG = re.compile(r"[^a-z0-9]+")


def slugify(name: str) -> str:
    slug = _SLUG.sub("-", name.strip().lower()).strip("-")
    if not slug:
        raise ValueError("tenant name must contain letters or digits")
    return slug[:64]


def ensure_default(conn: Connection) -> None:
    if conn.execute(select(tenants.c.id).where(tenants.c.id == DEFAULT_TENANT)).first():
        return
    try:
        with conn.begin_nested():
            conn.execute(
                insert(tenants).values(id=DEFAULT_TENANT, name="Default", created_at=clock.now())
            )
    except IntegrityError:
        pass


def create(conn: Connection, name: str) -> str:
    if len(name) > 200:
        raise ValueError("tenant name must be at most 200 characters")
    tenant_id = slugify(name)
    try:
        with conn.begin_nested():
            conn.execute(
                insert(tenants).values(id=tenant_id, name=name.strip(), created_at=clock.now())
            )
    except IntegrityError:
        raise ValueError(f"a tenant named {name!r} already exists") from None
    return tenant_id


def all_ids(conn: Connection) -> list[str]:
    return [r.id for r in conn.execute(select(tenants.c.id).order_by(tenants.c.id))]
