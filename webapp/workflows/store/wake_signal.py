"""The wake-up signal: whenever the store sets a pending row's `wake_at`, it
registers, after commit, a call of the one listener (the dispatch layer's: a
resume due now goes to the resume loops, a later one to the timer). The store
and the engine never talk to Redis themselves; with no listener (an engine
test, a tool) nothing is signalled and the minute sweep still finds every due
row from the table.

Before that, an in-transaction listener may take the wake-up into the
transaction itself (PostgreSQL's NOTIFY, `dispatch.pg_wake`): when it does,
nothing is signalled after commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from sqlalchemy import Connection

from webapp.core import db

# (tenant, run, step, wake_at), called after the transaction commits.
WakeListener = Callable[[str, str, int, datetime], None]
# (conn, tenant, run, step, wake_at) inside the transaction: True when it took it.
InTransactionListener = Callable[[Connection, str, str, int, datetime], bool]

_listener: WakeListener | None = None
_in_transaction: InTransactionListener | None = None


def listen_in_transaction(listener: InTransactionListener | None) -> None:
    """Install the in-transaction listener (None: every wake-up after commit)."""
    global _in_transaction
    _in_transaction = listener


def listen(listener: WakeListener | None) -> WakeListener | None:
    """Install the listener (None: signal nothing); returns the one before."""
    global _listener
    previous, _listener = _listener, listener
    return previous


def signal(conn: Connection, tenant_id: str, run_id: str, step_index: int, at: datetime) -> None:
    """After `conn` commits: tell the listener this step is due at `at`
    (unless the in-transaction listener took it)."""
    listener = _listener
    if listener is None:
        return
    taken = _in_transaction
    if taken is None or not taken(conn, tenant_id, run_id, step_index, at):
        db.after_commit(conn, lambda: listener(tenant_id, run_id, step_index, at))


@contextmanager
def muted() -> Iterator[None]:
    """Signal nothing inside the block (a bulk load whose rows the sweep or a
    drain job picks up). Process-wide: not for a process serving requests."""
    global _listener
    previous, _listener = _listener, None
    try:
        yield
    finally:
        _listener = previous
