"""SQLite: the engine for a file, and what every connection of it is set to.

Besides the journal (WAL), durability, foreign keys, the busy timeout and
`secure_delete`, two pragmas size how the file is read:

- `cache_size`: each connection's own page cache. SQLite's 2 MB default is
  outgrown by a single batch (a drain's 250 runs touch thousands of index
  pages once the log holds a million events), so a page is read again
  within the same transaction. The cache is filled only as pages are read,
  and a connection drops it whenever another one has committed since (WAL),
  so on a small database it never reaches the limit.
- `mmap_size` (off unless set): the file is read through a memory map, shared
  through the operating system's page cache, instead of a `read()` and a copy
  per page. Off by default because in WAL mode SQLite unmaps the file, as it
  drops its cache, at the start of every transaction that follows another
  connection's commit: with workers committing all the time, each transaction
  maps the file again and faults in every page it touches.

`docs/performance.md`, "SQLite", says when to change them; bench/README.md
has the measurements.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import QueuePool

MIB = 1024 * 1024


@dataclass(frozen=True)
class SqliteTuning:
    """`SQLITE_CACHE_MB` and `SQLITE_MMAP_MB` (0, the default: no map)."""

    cache_mb: int = 16
    mmap_mb: int = 0


def pragmas(tuning: SqliteTuning) -> list[str]:
    """The statements run on every new connection, in order."""
    return [
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
        "PRAGMA foreign_keys=ON",
        "PRAGMA busy_timeout=30000",
        # A delete overwrites what it frees with zeros, so an erased account's
        # rows leave no readable bytes in the file (see `db.shred_freed_pages`).
        "PRAGMA secure_delete=ON",
        # Negative: a size in KiB rather than in pages.
        f"PRAGMA cache_size=-{tuning.cache_mb * 1024}",
        f"PRAGMA mmap_size={tuning.mmap_mb * MIB}",
    ]


def _register_adapters() -> None:
    """Explicit sqlite3 adapters for datetimes bound without a column type (`text()`
    parameters): the defaults are deprecated since Python 3.12. Same ISO format as
    those defaults, so stored values do not change."""
    sqlite3.register_adapter(datetime, lambda value: value.isoformat(" "))
    sqlite3.register_adapter(date, lambda value: value.isoformat())


def make_engine(url: str, tuning: SqliteTuning, pool_size: int, max_overflow: int) -> Engine:
    """A pooled engine for a file (an in-memory database keeps SQLAlchemy's
    default pool: each new connection would be another, empty database).
    The driver autocommits; the caller decides how transactions begin."""
    _register_adapters()
    pool: dict[str, Any] = (
        {}
        if ":memory:" in url
        else {"poolclass": QueuePool, "pool_size": pool_size, "max_overflow": max_overflow}
    )
    engine = create_engine(
        url,
        connect_args={"timeout": 30, "check_same_thread": False, "isolation_level": None},
        **pool,
    )
    statements = pragmas(tuning)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        for statement in statements:
            cur.execute(statement)
        cur.close()

    return engine
