"""The `users` read model's one writer: an inline projection of every event of
the user's stream (events.py), updated in the append's transaction so the very
next page render sees the change.

Each capability module says what its events change in the row (`ROW_CHANGES`);
every event moves the row's version, which the account's next command appends
at. Privacy and the console publish their events on the stream; they never
write the table.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Connection, and_, delete, insert, update

from webapp.accounts import (
    change_email,
    change_password,
    deletion,
    language,
    registration,
    reset,
    restriction,
    signins,
)
from webapp.accounts import events as ev
from webapp.accounts.factors import row as factors_row
from webapp.accounts.identities import projection as identity_projection
from webapp.accounts.stream import RowChange
from webapp.accounts.tables import users
from webapp.eventstore import Event, register_inline

_CONSOLE: dict[str, RowChange] = {
    ev.ADMIN_GRANTED: lambda conn, e: {"is_admin": True},
    ev.ADMIN_REVOKED: lambda conn, e: {"is_admin": False},
}

ROW_CHANGES: dict[str, RowChange] = {
    **registration.ROW_CHANGES,
    **change_email.ROW_CHANGES,
    **change_password.ROW_CHANGES,
    **reset.ROW_CHANGES,
    **signins.ROW_CHANGES,
    **language.ROW_CHANGES,
    **deletion.ROW_CHANGES,
    **restriction.ROW_CHANGES,
    **factors_row.ROW_CHANGES,
    **identity_projection.ROW_CHANGES,
    **_CONSOLE,
}


def _of(e: Event) -> ColumnElement[bool]:
    return and_(users.c.tenant_id == e.tenant_id, users.c.id == e.aggregate_id)


def on_user_event(conn: Connection, e: Event) -> None:
    if e.type == ev.REGISTERED:
        values = registration.registered_row(conn, e)
        conn.execute(
            insert(users).values(
                tenant_id=e.tenant_id,
                id=e.aggregate_id,
                created_at=e.recorded_at,
                version=e.version,
                **values,
            )
        )
    elif e.type == ev.ERASED:
        conn.execute(delete(users).where(_of(e)))
    else:
        change = ROW_CHANGES.get(e.type)
        values = change(conn, e) if change else {}  # other events move the version only
        conn.execute(update(users).where(_of(e)).values(version=e.version, **values))


def register() -> None:
    for event_type in ev.ALL:
        register_inline(event_type, on_user_event)
