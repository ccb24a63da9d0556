"""What every bench needs: a Redis and a migrated database.

Redis is BENCH_REDIS_URL or an embedded redis-server on a unix socket in `tmp`;
the database is BENCH_DATABASE_URL or a SQLite file in `tmp`. With `reset`, an
external database's public schema is dropped first and an external Redis is
flushed (so only ever point BENCH_* at scratch services).
"""

from __future__ import annotations

import json
import os
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
