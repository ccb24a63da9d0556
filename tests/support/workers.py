"""One test session's own database and Redis when pytest-xdist runs the suite in
several worker processes (`make test` does, README "Two commands"): each worker gets a
PostgreSQL database of its own, created from TEST_DATABASE_URL's and dropped at
the end, and a Redis database index of its own on TEST_REDIS_URL's server. On
the embedded defaults each worker already has its own SQLite file and Redis
(both live under its own pytest temporary directory)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from redis.connection import parse_url
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

# Redis databases 0..15 exist by default; worker gwN takes base + 1 + N.
REDIS_DATABASES = 16


def worker_id() -> str | None:
    """`gw0`, `gw1`, ... in a pytest-xdist worker (which sets the variable before
    it loads any plugin), None in a session of its own."""
    return os.environ.get("PYTEST_XDIST_WORKER")


@contextmanager
def own_postgresql_database(url: str, worker: str) -> Iterator[str]:
    """`url` with the database `<its name>_<worker>`, created empty (dropped first
    if a killed session left it) and dropped when the session ends."""
    base = make_url(url)
    if base.get_backend_name() != "postgresql":
        raise RuntimeError(
            f"TEST_DATABASE_URL={url!r} with pytest-xdist: only a PostgreSQL URL is "
            "split per worker; leave it unset for SQLite (each worker has its own file)"
        )
    name = f"{base.database}_{worker}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield base.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def own_redis_database(url: str, worker: str) -> str:
    """`url` with the Redis database index of this worker (base + 1 + N for gwN),
    so that workers sharing one server never flush each other's keys."""
    base = int(parse_url(url).get("db", 0))
    index = base + 1 + int(worker.removeprefix("gw"))
    if index >= REDIS_DATABASES:
        raise RuntimeError(
            f"TEST_REDIS_URL={url!r}: worker {worker} would need Redis database {index}; "
            f"a default server has {REDIS_DATABASES}: run fewer workers"
        )
    head, sep, tail = url.partition("?")
    scheme, _, rest = head.partition("://")
    hostpart = rest.split("/", 1)[0]
    return f"{scheme}://{hostpart}/{index}{sep}{tail}"
