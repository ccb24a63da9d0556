"""Whether the database takes writes: a full disk and a read-only database.

Both backends answer reads while they refuse writes, so `SELECT 1` alone says
"healthy". Here:

- `refusal(exc)` names a refused write from the driver's own code: SQLite's
  SQLITE_FULL (`full`) and SQLITE_READONLY (`read-only`); PostgreSQL's
  SQLSTATE 53100 disk_full (`full`) and 25006 read_only_sql_transaction
  (`read-only`, e.g. `default_transaction_read_only`, a hot standby).
- A refused write is remembered in this process (`noted`) until a write
  commits again (`written`, called by `db` after every commit while one is
  remembered), and reported to the hooks (`on_refused`: the metrics counter).
- `probe(engine)` looks without writing: on SQLite whether the file (and its
  folder) may be written and whether the file system has room for a few
  pages; on PostgreSQL whether a new transaction would be read-only (the
  server in recovery, or `default_transaction_read_only`).

`condition(engine)` is what `/healthz` and `/readyz` say: `ok`, `full` or
`read-only`. A connection that was refused as read-only is dropped by the pool
(`mark_read_only_as_disconnect`): SQLite opens a write-protected file
read-only and PostgreSQL reads `default_transaction_read_only` when a session
starts, so the same connection would go on refusing after the file or the
setting is writable again; a new one writes, without a restart.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.pool import ConnectionPoolEntry

log = logging.getLogger(__name__)

OK = "ok"
FULL = "full"
READ_ONLY = "read-only"

SQLITE_READONLY = 8
SQLITE_FULL = 13
PG_DISK_FULL = "53100"
PG_READ_ONLY = "25006"
# Below this many free bytes SQLite's next write to the file or its log fails:
# a transaction appends its pages to the log and the checkpoint grows the file.
SQLITE_MIN_FREE = 256 * 1024
OPENED_READ_ONLY = "writable.opened_read_only"  # a pool record's mark

_lock = threading.Lock()
_refused: tuple[str, float] | None = None  # (what, time.monotonic()) of the last refusal
_hooks: list[Callable[[str], object]] = []


def refusal(exc: BaseException) -> str | None:
    """`full`, `read-only`, or None when `exc` is not a refused write."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        primary = code & 0xFF  # extended codes keep the primary one in the low byte
        return {SQLITE_FULL: FULL, SQLITE_READONLY: READ_ONLY}.get(primary)
    state = str(getattr(orig, "sqlstate", None) or "")
    return {PG_DISK_FULL: FULL, PG_READ_ONLY: READ_ONLY}.get(state)


def on_refused(hook: Callable[[str], object]) -> None:
    """Call `hook(what)` on every refused write this process sees."""
    if hook not in _hooks:
        _hooks.append(hook)


def noted(exc: BaseException) -> str | None:
    """Remember `exc` when it is a refused write; returns what it was."""
    global _refused
    what = refusal(exc)
    if what is None:
        return None
    with _lock:
        first = _refused is None
        _refused = (what, time.monotonic())
    if first:
        log.warning("the database refuses writes", extra={"condition": what})
    for hook in _hooks:
        try:
            hook(what)
        except Exception:  # counting never fails the caller
            log.exception("refused-write hook failed")
    return what


def pending() -> bool:
    """A refusal is remembered (cheap: `db` asks after every commit)."""
    return _refused is not None


def written() -> None:
    """A write committed: the database takes writes again."""
    global _refused
    with _lock:
        if _refused is None:
            return
        _refused = None
    log.warning("the database takes writes again")


def remembered() -> str | None:
    with _lock:
        return _refused[0] if _refused else None


def probe(engine: Engine) -> str:
    """What can be seen without writing (see the module's docstring)."""
    if engine.dialect.name == "sqlite":
        database = engine.url.database
        if not database or database == ":memory:":
            return OK
        path = Path(database)
        if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
            return READ_ONLY
        if shutil.disk_usage(path.parent).free < SQLITE_MIN_FREE:
            return FULL
        return OK
    with engine.connect() as conn:
        read_only, recovery = conn.exec_driver_sql(
            "SELECT current_setting('transaction_read_only'), pg_is_in_recovery()"
        ).one()
        if read_only == "on":  # a session started read-only stays so: not kept in the pool
            conn.invalidate()
    return READ_ONLY if read_only == "on" or recovery else OK


def condition(engine: Engine) -> str:
    """`ok`, `full` or `read-only`: the probe, else the last refusal seen here."""
    seen = probe(engine)
    if seen != OK:
        return seen
    return remembered() or OK


def mark_read_only_as_disconnect(engine: Engine) -> None:
    """A read-only refusal drops the connection (and the pool's idle ones),
    so the next checkout opens a fresh one that writes once it may. On
    SQLite a connection opened while the file was write-protected is also
    replaced at its next checkout once the file is writable again (only such
    connections pay the `access()` call)."""

    @event.listens_for(engine, "handle_error")
    def _refused(ctx: ExceptionContext) -> None:
        if ctx.original_exception is not None and refusal(ctx.original_exception) == READ_ONLY:
            ctx.is_disconnect = True

    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        return
    path = Path(database)

    @event.listens_for(engine, "connect")
    def _opened(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        if path.exists() and not os.access(path, os.W_OK):
            record.info[OPENED_READ_ONLY] = True

    @event.listens_for(engine, "checkout")
    def _writable_again(_dbapi_conn: Any, record: ConnectionPoolEntry, _p: Any) -> None:
        if record.info.get(OPENED_READ_ONLY) and os.access(path, os.W_OK):
            raise DisconnectionError("opened read-only; the file is writable again")
