"""Engine and transactions.

One engine per process, with a pool of connections on both backends (a SQLite
file too: opening one and setting its pragmas cost more than most requests, and
closing the last connection of a WAL database checkpoints it; a process that
forks drops the parent's pool without closing it, so parent and child never
share a connection). `transaction()` is the unit of work for writes: on SQLite
it starts with BEGIN IMMEDIATE (take the single write lock up front, so a
read-then-write transaction never fails with SQLITE_BUSY half way); on PostgreSQL
it is a normal READ COMMITTED transaction. `reading()` is for reads: one
deferred transaction on SQLite, no transaction at all on PostgreSQL (one round
trip per statement). After a commit that appended events, the registered
after-commit hooks run (the projection dispatcher uses this). A SQLite file's
engine and the pragmas of its connections are `webapp.core.sqlite_setup`'s.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, DateTime, Engine, MetaData, TypeDecorator, create_engine, event
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from webapp.core import sqlite_setup, writable
from webapp.core.sqlite_setup import SqliteTuning

log = logging.getLogger(__name__)

metadata = MetaData()

_engine: Engine | None = None
_readers: Engine | None = None  # the same pool, for `reading()`
_after_commit_hooks: list[Callable[[Connection], object]] = []
# The innermost open `transaction()` of this thread/task (webapp.publish.publish joins it).
_current: ContextVar[Connection | None] = ContextVar("current_transaction", default=None)

# Per process: at most this many pooled connections stay open (gunicorn's
# threads, the worker's jobs and the scheduler fit), more are opened on demand.
POOL_SIZE = 10
MAX_OVERFLOW = 20
# A server connection idle in the pool longer than this is pinged before use;
# one used more recently is trusted (HikariCP's "alive bypass window"). Under
# load that saves a round trip on nearly every checkout; a connection broken
# within the window fails its statement instead, which invalidates the whole
# pool (SQLAlchemy's disconnect handling), so the next checkouts reconnect.
ALIVE_BYPASS_SECONDS = 0.5
# Execution option: the statement a transaction starts with (None: no transaction).
BEGIN = "db.begin"
_RETURNED_AT = "db.returned_at"


def is_sqlite(engine_or_conn: Engine | Connection) -> bool:
    return engine_or_conn.dialect.name == "sqlite"


def pooling_from_env() -> str:
    """DATABASE_POOLING for an engine made from a URL alone (a test's, a
    bench's); the app validates the setting (`Config.database_pooling`)."""
    return os.environ.get("DATABASE_POOLING") or "session"


def make_engine(url: str, sqlite: SqliteTuning | None = None, pooling: str | None = None) -> Engine:
    """The engine for `url`. `pooling="transaction"`: the URL goes through a
    transaction-pooling pooler (PgBouncer's `pool_mode = transaction`), where
    consecutive transactions of one client may run on different server
    connections, so the driver prepares no statement on the server (a
    prepared statement lives in one server connection). Nothing else the
    product does keeps state in a session across transactions: its advisory
    lock is transaction-scoped and reads run one statement each."""
    if url.startswith("sqlite"):
        engine = sqlite_setup.make_engine(url, sqlite or SqliteTuning(), POOL_SIZE, MAX_OVERFLOW)
        _begin_explicitly(engine, "BEGIN DEFERRED")
        writable.mark_read_only_as_disconnect(engine)
        return engine
    pooled = (pooling or pooling_from_env()) == "transaction"
    # The driver autocommits and a transaction sends its own BEGIN, as on SQLite:
    # so a read (`reading()`) sends its one statement and nothing else.
    engine = create_engine(
        url,
        pool_size=POOL_SIZE,
        max_overflow=MAX_OVERFLOW,
        isolation_level="AUTOCOMMIT",
        connect_args={"prepare_threshold": None} if pooled else {},
    )
    _begin_explicitly(engine, "BEGIN")
    _ping_when_idle(engine)
    writable.mark_read_only_as_disconnect(engine)
    return engine


def _begin_explicitly(engine: Engine, default: str) -> None:
    """Both drivers run in autocommit mode; when SQLAlchemy begins a transaction
    this sends the connection's BEGIN option (`default` if unset; none for a
    PostgreSQL read). COMMIT and ROLLBACK are the drivers' own, which send them
    whenever a transaction is open on the server."""

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        statement = conn.get_execution_options().get(BEGIN, default)
        if statement:
            conn.exec_driver_sql(statement)


def _ping_when_idle(engine: Engine) -> None:
    """`pool_pre_ping`, but only for a connection that sat in the pool longer
    than ALIVE_BYPASS_SECONDS: a failed ping makes the pool replace it
    (DisconnectionError retries the checkout on a new connection)."""
    dialect = engine.dialect

    @event.listens_for(engine, "connect")
    def _fresh(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(
        dbapi_conn: Any, record: ConnectionPoolEntry, _p: PoolProxiedConnection
    ) -> None:
        if time.monotonic() - record.info.get(_RETURNED_AT, 0.0) <= ALIVE_BYPASS_SECONDS:
            return
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError(f"pooled connection is gone: {exc}") from exc


def init_engine(url: str, sqlite: SqliteTuning | None = None, pooling: str | None = None) -> Engine:
    """The process's engine for `url`; `sqlite` sizes a SQLite file's page
    cache and memory map (`sqlite_setup`; the defaults when None); `pooling`
    as in `make_engine`."""
    global _engine, _readers
    if _engine is not None:
        retire(_engine)
    _engine = make_engine(url, sqlite, pooling)
    # A PostgreSQL read needs no transaction: under READ COMMITTED every
    # statement has its own snapshot anyway, and BEGIN and ROLLBACK would be two
    # more round trips. A SQLite read keeps its deferred transaction (one
    # snapshot of the file for all its statements, and no round trips).
    _readers = _engine if is_sqlite(_engine) else _engine.execution_options(**{BEGIN: None})
    return _engine


@contextmanager
def engine_restored() -> Iterator[None]:
    """The engine set up inside the block (`init_engine`) is disposed on
    leaving and the one before is put back: the workflow test harness runs an
    app on a database of its own inside a process that may have one."""
    global _engine, _readers
    saved = (_engine, _readers)
    try:
        yield
    finally:
        if _engine is not None and _engine is not saved[0]:
            retire(_engine)
        _engine, _readers = saved


def retire(engine: Engine) -> None:
    """Close `engine`'s idle connections, and every other one as it is given
    back: a thread may still hold one (a request streaming when the engine is
    set up again), or call the old engine later. `Engine.dispose` alone
    leaves those open in a pool nobody uses, until the garbage collector
    finds them open."""
    event.listen(engine, "checkin", _close_on_return)  # the recreated pool inherits it
    engine.dispose()


def _close_on_return(dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
    if dbapi_conn is not None:
        record.close()


def _forget_pool_after_fork() -> None:
    """In a forked child (RQ's fork worker, gunicorn --preload): start with an
    empty pool, leaving the parent's connections open for the parent."""
    if _engine is not None:
        _engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def get_engine() -> Engine:
    if _engine is None:
        raise RuntimeError("database engine not initialised; call create_app() first")
    return _engine


def on_after_commit(hook: Callable[[Connection], object]) -> None:
    if hook not in _after_commit_hooks:
        _after_commit_hooks.append(hook)


@contextmanager
def transaction() -> Iterator[Connection]:
    """A write transaction: commit on success, roll back on any exception."""
    engine = get_engine()
    conn = engine.connect()
    if is_sqlite(engine):
        conn = conn.execution_options(**{BEGIN: "BEGIN IMMEDIATE"})
    token = _current.set(conn)
    try:
        try:
            with conn.begin():
                yield conn
                while conn.info.get("before_commit"):  # a hook may add another
                    conn.info["before_commit"].pop(0)()
        except DBAPIError as exc:  # a full disk or a read-only database is remembered
            writable.noted(exc)
            raise
        finally:
            _current.reset(token)
        _committed(conn)
    finally:
        _forget_transaction(conn)
        conn.close()


@contextmanager
def statement_commits() -> Iterator[Connection]:
    """PostgreSQL only: a connection on which every statement is its own
    transaction (no BEGIN, no COMMIT: one round trip), for a write that is
    a single statement with nothing else bound to it (`publish` of an event
    no inline projection reads). After-commit work runs as for `transaction()`."""
    if _readers is None or is_sqlite(_readers):
        raise RuntimeError("statement_commits() needs the PostgreSQL engine")
    conn = _readers.connect()
    try:
        try:
            yield conn
        except DBAPIError as exc:
            writable.noted(exc)
            raise
        _committed(conn)
    finally:
        _forget_transaction(conn)
        conn.close()


def _committed(conn: Connection) -> None:
    if writable.pending():  # the database took a write: no longer full or read-only
        writable.written()
    info = conn.info  # one lookup: each goes through the pooled connection
    deferred = info.pop("after_commit", ())
    hooks = list(_after_commit_hooks) if info.pop("events_appended", 0) else []
    for fn in [*deferred, *((lambda h=h: h(conn)) for h in hooks)]:
        try:
            fn()
        except Exception:  # work after commit never fails the caller
            log.exception("after-commit callback failed")


_TRANSACTION_KEYS = ("events_appended", "after_commit", "before_commit", "tx_scope")


def _forget_transaction(conn: Connection) -> None:
    info = conn.info
    for key in _TRANSACTION_KEYS:
        info.pop(key, None)


def current_transaction() -> Connection | None:
    """The connection of the innermost `transaction()` open here, if any."""
    return _current.get()


def tx_scope(conn: Connection) -> dict[str, Any]:
    """A dict that lives exactly as long as this transaction (`conn.info`
    outlives it: it belongs to the pooled DBAPI connection)."""
    scope: dict[str, Any] = conn.info.setdefault("tx_scope", {})
    return scope


def before_commit(conn: Connection, fn: Callable[[], None]) -> None:
    """Run `fn` inside this transaction, just before it commits (an error
    rolls the whole transaction back). Lets a batch defer its appends to the
    end, so the append lock is held only for the commit, not the batch."""
    conn.info.setdefault("before_commit", []).append(fn)


def collect_before_commit(
    conn: Connection, key: str, item: Any, flush: Callable[[list[Any]], None]
) -> None:
    """Add `item` to this transaction's list under `key`; just before commit,
    `flush` gets the whole list, in the order added (registered by the first
    item). Lets a trigger batch decide what takes a lock at the very end."""
    scope = tx_scope(conn)
    items = scope.get(key)
    if items is None:
        items = scope[key] = []
        before_commit(conn, lambda: flush(scope.pop(key, [])))
    items.append(item)


def after_commit(conn: Connection, fn: Callable[[], None]) -> None:
    """Run `fn` once this transaction has committed (never if it rolls back)."""
    conn.info.setdefault("after_commit", []).append(fn)


def shred_freed_pages() -> None:
    """After an erasure: on SQLite, copy the write-ahead log into the database
    file and truncate it, since the log still holds the pages as they were before
    the delete zeroed them. PostgreSQL gives no such guarantee for dead rows
    (docs/privacy.md, "What erasure leaves behind"); there this does nothing.
    A reader holding an old snapshot keeps the log from being truncated; the
    next erase job's checkpoint completes it."""
    engine = get_engine()
    if not is_sqlite(engine):
        return
    with engine.connect() as conn:
        busy, _log, _done = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
    if busy:
        logging.getLogger(__name__).warning("wal checkpoint incomplete: a reader was busy")


def ping() -> None:
    """One statement on a pooled connection, outside any transaction: the
    health check's proof that the database answers."""
    with reading() as conn:
        conn.exec_driver_sql("SELECT 1").scalar()


def readers() -> Engine:
    """The engine `reading()` takes its connections from (the same pool)."""
    if _readers is None:
        raise RuntimeError("database engine not initialised; call create_app() first")
    return _readers


@contextmanager
def reading() -> Iterator[Connection]:
    """A connection for reads: on SQLite in a deferred transaction, rolled back
    at the end; on PostgreSQL outside any transaction (see `init_engine`)."""
    if _readers is None:
        raise RuntimeError("database engine not initialised; call create_app() first")
    with _readers.connect() as conn:
        yield conn


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; use webapp.core.clock.now()")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
