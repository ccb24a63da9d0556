"""Inline projection of the identity events into `user_identities`, in the
append's transaction. Erasure deletes every row of the account; an
operator's `flask users reset-factors` leaves them (they are a way to sign
in, not a second factor)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, insert

from webapp.accounts import events as ev
from webapp.accounts.identities import store
from webapp.accounts.identities.tables import user_identities
from webapp.accounts.stream import RowChange, unsealed
from webapp.accounts.tables import users
from webapp.eventstore import Event, register_inline


def on_linked(conn: Connection, e: Event) -> None:
    email = e.payload.get("email")
    conn.execute(
        insert(user_identities).values(
            id=e.payload["identity_id"],
            tenant_id=e.tenant_id,
            user_id=e.aggregate_id,
            provider=e.payload["provider"],
            subject=unsealed(conn, e, "subject"),
            email=unsealed(conn, e, "email") if email else None,
            linked_at=e.recorded_at,
        )
    )


def on_unlinked(conn: Connection, e: Event) -> None:
    conn.execute(delete(user_identities).where(user_identities.c.id == e.payload["identity_id"]))


def on_erased(conn: Connection, e: Event) -> None:
    store.delete_all(conn, e.tenant_id, e.aggregate_id)


# What the events change in the account's `users` row (accounts/projection.py
# writes it): how many identities it has.
ROW_CHANGES: dict[str, RowChange] = {
    ev.IDENTITY_LINKED: lambda conn, e: {"identities": users.c.identities + 1},
    ev.IDENTITY_UNLINKED: lambda conn, e: {"identities": users.c.identities - 1},
}


def register() -> None:
    for event_type, handler in {
        ev.IDENTITY_LINKED: on_linked,
        ev.IDENTITY_UNLINKED: on_unlinked,
        ev.ERASED: on_erased,
    }.items():
        register_inline(event_type, handler)
