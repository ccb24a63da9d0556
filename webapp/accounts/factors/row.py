"""What the factor events change in the account's `users` row: whether the
authenticator app is on, how many passkeys and recovery codes there are, so
the profile renders from the row alone (accounts/projection.py applies these).

Recovery codes stand in for a second factor: they exist while any factor
(the app or a passkey) does, and go when the last one is removed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from webapp.accounts import events as ev
from webapp.accounts.factors.tables import user_factors
from webapp.accounts.stream import RowChange, unsealed
from webapp.accounts.tables import users
from webapp.eventstore import Event

NONE_LEFT = {"totp_since": None, "recovery_codes_left": 0, "passkeys": 0}


def _codes(conn: Connection, e: Event) -> dict[str, Any]:
    return {"recovery_codes_left": len(unsealed(conn, e, "hashes").split())}


def _others_left(conn: Connection, e: Event) -> bool:
    """Whether a confirmed factor other than the removed one remains (whichever
    of this and the factor table's projection runs first)."""
    c = user_factors.c
    found = conn.execute(
        select(c.id)
        .where(
            c.tenant_id == e.tenant_id,
            c.user_id == e.aggregate_id,
            c.confirmed_at.is_not(None),
            c.id != e.payload["factor_id"],
        )
        .limit(1)
    ).first()
    return found is not None


def _removed(clear: dict[str, Any]) -> RowChange:
    def change(conn: Connection, e: Event) -> dict[str, Any]:
        return clear if _others_left(conn, e) else {**clear, "recovery_codes_left": 0}

    return change


ROW_CHANGES: dict[str, RowChange] = {
    ev.TOTP_ADDED: lambda conn, e: {"totp_since": e.recorded_at},
    # The last factor gone: its recovery codes go with it (projection.py).
    ev.TOTP_REMOVED: _removed({"totp_since": None}),
    ev.PASSKEY_ADDED: lambda conn, e: {"passkeys": users.c.passkeys + 1},
    ev.PASSKEY_REMOVED: _removed({"passkeys": users.c.passkeys - 1}),
    ev.RECOVERY_CODES_GENERATED: _codes,
    ev.RECOVERY_CODE_USED: lambda conn, e: {"recovery_codes_left": users.c.recovery_codes_left - 1},
    ev.FACTORS_RESET: lambda conn, e: NONE_LEFT,
}
