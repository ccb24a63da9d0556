"""SQLite: a consistent copy of the live file, its check, and its swap into place.

`VACUUM INTO` writes the database as one read transaction sees it: web,
worker and scheduler go on writing meanwhile (WAL: a reader never blocks a
writer, and the copy holds every transaction committed before it began and
none after). The copy is compacted, and switched from WAL to a rollback
journal so that it is one self-contained file that can be opened read-only
without leaving `-wal`/`-shm` files beside it. `PRAGMA integrity_check` then
reads every page of the copy.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url

from webapp.backup.archive import BackupError

SIDE_FILES = ("-wal", "-shm", "-journal")


def database_path(url: str) -> Path:
    path = make_url(url).database
    if not path or path == ":memory:":
        raise BackupError("an in-memory SQLite database has nothing to back up")
    return Path(path)


def copy(live: Path, target: Path) -> None:
    """`VACUUM INTO target` from a connection of its own, then a rollback journal."""
    if not live.exists():
        raise BackupError(f"no database at {live}")
    with closing(sqlite3.connect(live, timeout=30, isolation_level=None)) as conn:
        conn.execute("PRAGMA busy_timeout=30000")
        try:
            conn.execute("VACUUM INTO ?", (str(target),))
        except sqlite3.Error as exc:
            raise BackupError(f"the copy failed: {exc}") from None
    with closing(sqlite3.connect(target, isolation_level=None)) as copied:
        copied.execute("PRAGMA journal_mode=DELETE")
    target.chmod(0o600)


def read_only(path: Path) -> Engine:
    """An engine that opens `path` read-only (nothing is written beside it)."""
    return create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")


def integrity(path: Path) -> list[str]:
    """What `PRAGMA integrity_check` says is wrong with the file (empty: ok)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.Error as exc:
        return [f"cannot be read: {exc}"]
    return [] if rows == ["ok"] else rows


def swap_in(copy_file: Path, live: Path, stamp: str) -> list[Path]:
    """Put `copy_file` at `live`. The database there (with its `-wal` and
    `-shm`, which may hold its last commits) is renamed aside with `stamp`,
    never deleted; returns those names. The new file is written beside the
    live one, synced, then renamed over it."""
    kept: list[Path] = []
    for suffix in ("", *SIDE_FILES):
        current = Path(f"{live}{suffix}")
        if current.exists():
            aside = Path(f"{live}{suffix}.before-restore-{stamp}")
            current.rename(aside)
            kept.append(aside)
    incoming = Path(f"{live}.restoring")
    shutil.copyfile(copy_file, incoming)
    fd = os.open(incoming, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    incoming.chmod(0o600)
    incoming.rename(live)
    fd = os.open(live.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return kept
