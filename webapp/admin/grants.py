"""Who may enter the console: `user.admin-granted` / `user.admin-revoked` on the
user's own stream (actor in the metadata), kept in `users.is_admin` inline."""

from __future__ import annotations

from sqlalchemy import Connection, update

from webapp import db
from webapp.accounts import emails
from webapp.accounts.tables import users
from webapp.accounts.users import find_by_email, stream_of
from webapp.eventstore import Event, Metadata, NewEvent, append, register_inline
from webapp.tenants import DEFAULT_TENANT

ADMIN_GRANTED = "user.admin-granted"
ADMIN_REVOKED = "user.admin-revoked"


class GrantError(LookupError):
    """No such account (the message says which address)."""


def _on_grant(conn: Connection, e: Event) -> None:
    conn.execute(
        update(users)
        .where(users.c.tenant_id == e.tenant_id, users.c.id == e.aggregate_id)
        .values(is_admin=e.type == ADMIN_GRANTED, version=e.version)
    )


def register() -> None:
    register_inline(ADMIN_GRANTED, _on_grant)
    register_inline(ADMIN_REVOKED, _on_grant)


def set_admin(address: str, admin: bool, actor: str, tenant_id: str = DEFAULT_TENANT) -> bool:
    """Grant (or revoke) the console; False when the account already was so
    (nothing appended). Raises GrantError for an unknown address."""
    wanted = emails.normalize(address.strip()) or address.strip().lower()
    with db.transaction() as conn:
        user = find_by_email(conn, wanted, tenant_id)
        if user is None:
            raise GrantError(f"no account with the address {address!r} in tenant {tenant_id!r}")
        if user.is_admin == admin:
            return False
        event = NewEvent(ADMIN_GRANTED if admin else ADMIN_REVOKED, {})
        append(conn, stream_of(tenant_id, user.id), [event], user.version, Metadata(actor=actor))
    return True
