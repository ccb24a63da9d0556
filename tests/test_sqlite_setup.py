"""Every connection to a SQLite file gets the same set-up: the write-ahead
log, the durability and erasure pragmas, and the page cache and memory map
the operator sized with SQLITE_CACHE_MB and SQLITE_MMAP_MB (docs/performance.md,
"SQLite").

Each test opens a SQLite file of its own, whatever TEST_DATABASE_URL says:
these settings only apply to SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webapp import create_app
from webapp.core import db
from webapp.core.config import Config, ConfigError
from webapp.core.sqlite_setup import SqliteTuning


def pragma(conn: Any, name: str) -> Any:
    return conn.exec_driver_sql(f"PRAGMA {name}").scalar()


def test_every_pooled_connection_gets_the_cache_and_map_asked_for(tmp_path: Path) -> None:
    engine = db.make_engine(f"sqlite:///{tmp_path / 'app.db'}", SqliteTuning(32, 64))
    try:
        # Two at once: the second is a new connection, not the first one reused.
        with engine.connect() as first, engine.connect() as second:
            for conn in (first, second):
                assert pragma(conn, "cache_size") == -32 * 1024  # KiB
                assert pragma(conn, "mmap_size") == 64 * 1024 * 1024
                assert pragma(conn, "journal_mode") == "wal"
                assert pragma(conn, "synchronous") == 1  # NORMAL
                assert pragma(conn, "foreign_keys") == 1
                assert pragma(conn, "secure_delete") == 1
    finally:
        engine.dispose()


def test_a_map_of_zero_reads_the_file_without_one(tmp_path: Path) -> None:
    engine = db.make_engine(f"sqlite:///{tmp_path / 'app.db'}", SqliteTuning(4, 0))
    try:
        with engine.connect() as conn:
            assert pragma(conn, "mmap_size") == 0
            assert pragma(conn, "cache_size") == -4 * 1024
    finally:
        engine.dispose()


def test_the_app_sizes_its_connections_from_the_settings(tmp_path: Path) -> None:
    cfg = Config.from_env(
        {
            "INSTANCE_PATH": str(tmp_path),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}",
            "REDIS_URL": "redis://127.0.0.1:1/0",  # never contacted here
            "SQLITE_CACHE_MB": "8",
            "SQLITE_MMAP_MB": "256",
        }
    )
    with db.engine_restored():
        create_app(cfg)
        with db.reading() as conn:
            assert pragma(conn, "cache_size") == -8 * 1024
            assert pragma(conn, "mmap_size") == 256 * 1024 * 1024


def test_defaults_are_a_16_mib_cache_and_no_map(tmp_path: Path) -> None:
    cfg = Config.from_env({"INSTANCE_PATH": str(tmp_path)})
    assert (cfg.sqlite_cache_mb, cfg.sqlite_mmap_mb) == (16, 0)
    assert SqliteTuning() == SqliteTuning(cfg.sqlite_cache_mb, cfg.sqlite_mmap_mb)


@pytest.mark.parametrize(
    ("name", "value"),
    [("SQLITE_CACHE_MB", "0"), ("SQLITE_CACHE_MB", "lots"), ("SQLITE_MMAP_MB", "4096")],
)
def test_out_of_range_sizes_stop_start_up_naming_the_variable(
    tmp_path: Path, name: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=name):
        Config.from_env({"INSTANCE_PATH": str(tmp_path), name: value})
