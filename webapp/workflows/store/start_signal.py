"""The start signal: when the store starts queued runs (a slot freed), it
registers, after commit, a call of the one listener (the dispatch layer's:
an advance job for them). With no listener nothing is signalled; the minute
sweep re-dispatches started runs nobody leased."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from webapp.core import db

StartListener = Callable[[str, list[str]], None]  # (tenant, run ids), after commit

_listener: StartListener | None = None


def listen(listener: StartListener | None) -> StartListener | None:
    """Install the listener (None: signal nothing); returns the one before."""
    global _listener
    previous, _listener = _listener, listener
    return previous


def signal(conn: Connection, tenant_id: str, run_ids: list[str]) -> None:
    listener = _listener
    if listener is not None and run_ids:
        db.after_commit(conn, lambda: listener(tenant_id, list(run_ids)))
