"""What every bench needs: a Redis and a migrated database.

Redis is BENCH_REDIS_URL or an embedded redis-server on a unix socket in `tmp`;
the database is BENCH_DATABASE_URL or a SQLite file in `tmp`. With `reset`, an
external database's public schema is dropped first and an external Redis is
flushed (so only ever point BENCH_* at scratch services).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any


def services(stack: ExitStack, tmp: Path, reset: bool) -> tuple[str, str]:
    redis_url = os.environ.get("BENCH_REDIS_URL")
    if not redis_url:
        from webapp.core import embedded_redis

        proc = embedded_redis.start(tmp / "redis.sock")
        stack.callback(embedded_redis.stop, proc)
        redis_url = embedded_redis.url_for(tmp / "redis.sock")
    elif reset:
        from redis import Redis

        Redis.from_url(redis_url).flushdb()
    db_url = os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{tmp / 'bench.db'}"
    if reset and db_url.startswith("postgres"):
        from sqlalchemy import create_engine, text

        eng = create_engine(db_url)
        with eng.begin() as conn:
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        eng.dispose()
    from webapp.core.migrate import upgrade

    upgrade(db_url)
    return db_url, redis_url


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Store `result` under its backend in the results file (other backends' entries
    stay), and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except ValueError:  # a half-written file from an interrupted run
            data = {}
    data[result["backend"]] = result
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"\nwrote {path.relative_to(path.parents[2])} [{result['backend']}]")


RAW_COMMITS_TABLE = "bench_raw_commits"


def _commits_per_s(execute: Any, insert: str, seconds: float) -> float:
    """`insert` (one parameter: a key) committed one row at a time for `seconds`."""
    n = 0
    began = time.perf_counter()
    deadline = began + seconds
    while time.perf_counter() < deadline:
        execute(insert, (f"raw-{n}",))
        n += 1
    return n / (time.perf_counter() - began)


def raw_commits_per_s(db_url: str, seconds: float = 3.0) -> float:
    """The hardware's baseline for a drain: single-row INSERTs, each its own
    commit, from one connection of the driver (no ORM), into a table of a
    run row's width. SQLite with the product's settings (WAL, synchronous
    NORMAL); PostgreSQL in autocommit."""
    row = "(run_id, status, results) VALUES ({p}, 'completed', '{{\"x\": 1}}')"
    create = (
        f"CREATE TABLE IF NOT EXISTS {RAW_COMMITS_TABLE}"
        " (run_id text PRIMARY KEY, status text NOT NULL, results text NOT NULL)"
    )
    insert = f"INSERT INTO {RAW_COMMITS_TABLE} " + row
    if db_url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(db_url.split("sqlite:///", 1)[1], isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(create)
        rate = _commits_per_s(conn.execute, insert.format(p="?"), seconds)
        conn.execute(f"DROP TABLE {RAW_COMMITS_TABLE}")
        conn.close()
        return rate
    import psycopg

    with psycopg.connect(db_url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as pg:
        pg.execute(create)
        rate = _commits_per_s(pg.execute, insert.format(p="%s"), seconds)
        pg.execute(f"DROP TABLE {RAW_COMMITS_TABLE}")
    return rate
