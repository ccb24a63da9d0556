"""Inline projection of the factor events (the app, passkeys, recovery
codes) into `user_factors` and `recovery_codes`, in the append's transaction (the `users` row's version is
the accounts' projection's). Erasure and an operator's reset delete every row."""

from __future__ import annotations

from sqlalchemy import Connection, delete, insert, update

from webapp.accounts import events as ev
from webapp.accounts.factors import store
from webapp.accounts.factors.tables import PASSKEY, TOTP, recovery_codes, user_factors
from webapp.accounts.stream import unsealed
from webapp.eventstore import Event, register_inline


def on_totp_added(conn: Connection, e: Event) -> None:
    # The confirmed factor replaces its set-up row (same id) and any other set-up.
    conn.execute(
        delete(user_factors).where(
            user_factors.c.tenant_id == e.tenant_id,
            user_factors.c.user_id == e.aggregate_id,
            user_factors.c.kind == TOTP,
        )
    )
    conn.execute(
        insert(user_factors).values(
            id=e.payload["factor_id"],
            tenant_id=e.tenant_id,
            user_id=e.aggregate_id,
            kind=TOTP,
            name=e.payload["name"],
            secret=e.payload["secret"],  # as stored in the event: sealed
            created_at=e.recorded_at,
            confirmed_at=e.recorded_at,
        )
    )


def on_passkey_added(conn: Connection, e: Event) -> None:
    conn.execute(
        insert(user_factors).values(
            id=e.payload["factor_id"],
            tenant_id=e.tenant_id,
            user_id=e.aggregate_id,
            kind=PASSKEY,
            name=unsealed(conn, e, "name"),
            secret="",  # a passkey has no secret here: only its public key
            created_at=e.recorded_at,
            confirmed_at=e.recorded_at,
            credential_id=unsealed(conn, e, "credential_id"),
            public_key=unsealed(conn, e, "public_key"),
            sign_count=e.payload["sign_count"],
            transports=e.payload["transports"],
            user_handle=unsealed(conn, e, "user_handle"),
        )
    )


def on_factor_removed(conn: Connection, e: Event) -> None:
    conn.execute(delete(user_factors).where(user_factors.c.id == e.payload["factor_id"]))
    # Recovery codes stand in for a factor: with none left they go too.
    if not store.has_second_factor(conn, e.tenant_id, e.aggregate_id):
        conn.execute(
            delete(recovery_codes).where(
                recovery_codes.c.tenant_id == e.tenant_id,
                recovery_codes.c.user_id == e.aggregate_id,
            )
        )


def on_codes_generated(conn: Connection, e: Event) -> None:
    """A new batch voids every older code."""
    conn.execute(
        delete(recovery_codes).where(
            recovery_codes.c.tenant_id == e.tenant_id, recovery_codes.c.user_id == e.aggregate_id
        )
    )
    hashes = unsealed(conn, e, "hashes").split()
    conn.execute(
        insert(recovery_codes),
        [
            {
                "batch": e.payload["batch"],
                "number": number,
                "tenant_id": e.tenant_id,
                "user_id": e.aggregate_id,
                "code_hash": code_hash,
                "created_at": e.recorded_at,
            }
            for number, code_hash in enumerate(hashes, start=1)
        ],
    )


def on_code_used(conn: Connection, e: Event) -> None:
    conn.execute(
        update(recovery_codes)
        .where(
            recovery_codes.c.batch == e.payload["batch"],
            recovery_codes.c.number == e.payload["number"],
        )
        .values(used_at=e.recorded_at)
    )


def on_all_gone(conn: Connection, e: Event) -> None:
    store.delete_all(conn, e.tenant_id, e.aggregate_id)


def register() -> None:
    for event_type, handler in {
        ev.TOTP_ADDED: on_totp_added,
        ev.TOTP_REMOVED: on_factor_removed,
        ev.PASSKEY_ADDED: on_passkey_added,
        ev.PASSKEY_REMOVED: on_factor_removed,
        ev.RECOVERY_CODES_GENERATED: on_codes_generated,
        ev.RECOVERY_CODE_USED: on_code_used,
        ev.FACTORS_RESET: on_all_gone,
        ev.ERASED: on_all_gone,
    }.items():
        register_inline(event_type, handler)
