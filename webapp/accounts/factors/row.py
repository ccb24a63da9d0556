"""What the factor events change in the account's `users` row: whether the
authenticator app is on and how many recovery codes are left, so the profile
renders from the row alone (accounts/projection.py applies these)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from webapp.accounts import events as ev
from webapp.accounts.stream import RowChange, unsealed
from webapp.accounts.tables import users
from webapp.eventstore import Event

NONE_LEFT = {"totp_since": None, "recovery_codes_left": 0}


def _codes(conn: Connection, e: Event) -> dict[str, Any]:
    return {"recovery_codes_left": len(unsealed(conn, e, "hashes").split())}


ROW_CHANGES: dict[str, RowChange] = {
    ev.TOTP_ADDED: lambda conn, e: {"totp_since": e.recorded_at},
    # The only factor gone: its recovery codes go with it (projection.py).
    ev.TOTP_REMOVED: lambda conn, e: NONE_LEFT,
    ev.RECOVERY_CODES_GENERATED: _codes,
    ev.RECOVERY_CODE_USED: lambda conn, e: {"recovery_codes_left": users.c.recovery_codes_left - 1},
    ev.FACTORS_RESET: lambda conn, e: NONE_LEFT,
}
