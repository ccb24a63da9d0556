"""Shared fixtures: a real database (SQLite file, or PostgreSQL when
TEST_DATABASE_URL is set), a real Redis (the embedded binary, or TEST_REDIS_URL),
a frozen clock, and a way to run the real RQ worker in burst mode."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from sqlalchemy import create_engine, text

from tests import procs
from tests.mailserver import PrivateRedis, SmtpServer
from tests.support import pgbouncer, workers
from tests.support.burst import BurstWorker
from tests.support.database import clean_database
from webapp import create_app
from webapp.core import clock as clockmod
from webapp.core import db, embedded_redis
from webapp.core.clock import FrozenClock
from webapp.core.config import Config
from webapp.core.migrate import upgrade
from webapp.eventstore import projections
from webapp.jobs.queue import QUEUES
from webapp.metrics import MULTIPROC_ENV
from webapp.workflows.engine import heartbeat

if pgbouncer.wanted():  # every engine and every process the tests start goes through it
    os.environ.setdefault("DATABASE_POOLING", "transaction")

# Shared helpers and fixtures (tests/support/__init__.py says what is where).
pytest_plugins = [
    "tests.support.web",
    "tests.support.accounts",
    "tests.support.workflows",
    "tests.support.api",
]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list[Any]) -> None:
    """Each pytest-xdist worker counts its metrics in a directory of its own:
    set in the worker's environment before it starts (execnet's `env:`), so
    before the worker imports webapp.metrics, which reads it once. Workers that
    shared one directory would see each other's samples on /metrics."""
    for spec in specs:
        path = tempfile.mkdtemp(prefix="test-metrics-")
        atexit.register(shutil.rmtree, path, True)
        spec.env[MULTIPROC_ENV] = path


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("TEST_REDIS_URL")
    if url:
        worker = workers.worker_id()
        yield workers.own_redis_database(url, worker) if worker else url
        return
    sock = tmp_path_factory.mktemp("redis") / "redis.sock"
    proc = embedded_redis.start(sock)
    try:
        yield embedded_redis.url_for(sock)
    finally:
        embedded_redis.stop(proc)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("TEST_DATABASE_URL")
    worker = workers.worker_id()
    if url and worker:  # pytest-xdist: a database of this worker's own
        with workers.own_postgresql_database(url, worker) as own, _pooled(own) as through:
            upgrade(through)
            yield through
        return
    if url:
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        engine.dispose()
        with _pooled(url) as through:
            upgrade(through)
            yield through
        return
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    upgrade(url)
    yield url


def _pooled(url: str) -> AbstractContextManager[str]:
    """`url` itself, or (TEST_PGBOUNCER=1) through a PgBouncer in transaction
    pooling mode started for the session."""
    return pgbouncer.in_front_of(url) if pgbouncer.wanted() else nullcontext(url)


@pytest.fixture
def backend(database_url: str) -> str:
    return "postgresql" if database_url.startswith("postgresql") else "sqlite"


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    frozen = FrozenClock()
    previous = clockmod.set_clock(frozen)
    yield frozen
    clockmod.set_clock(previous)


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    """Settings a test package runs with unless a test overrides them (the
    account-heavy packages set `tests.support.accounts.CHEAP` in their conftest)."""
    return {}


@pytest.fixture
def make_config(
    database_url: str, redis_url: str, tmp_path: Path, config_defaults: dict[str, Any]
) -> Any:
    def make(**overrides: Any) -> Config:
        values: dict[str, Any] = dict(
            instance_path=tmp_path / "instance",
            database_url=database_url,
            redis_url=redis_url,
            redis_embedded=False,
            secret_key="test-secret-key-0123456789abcdef",
            testing=True,
            base_url="http://localhost",
            database_pooling=db.pooling_from_env(),
        )
        values.update(config_defaults)
        values.update(overrides)
        (tmp_path / "instance").mkdir(exist_ok=True)
        return Config(**values)

    return make


def _stop_background_threads() -> None:
    """Before the database cleanup, the engine's background threads have ended:
    the lease heartbeat is stopped and joined, and no other workflow thread
    (resume loop, timer) is left running. One still writing while the cleanup
    deletes makes the cleanup fail at random on SQLite ("database is locked":
    its read-then-write transaction cannot wait for another writer). Threads a
    test starts itself are joined by that test."""
    assert heartbeat.stop(), "the lease heartbeat thread did not stop"
    alive = [t.name for t in threading.enumerate() if t.name.startswith("workflow-")]
    assert not alive, f"workflow threads still running before the database cleanup: {alive}"


@pytest.fixture(scope="module", autouse=True)
def _collect_after_module() -> Iterator[None]:
    """Whatever a module's tests left open (a database connection, a file) is
    freed by the cycle collector at some later moment, and its ResourceWarning
    (an error here) would fail whichever test runs then (Python 3.13 warns for
    an unclosed sqlite3 connection, which sits in a reference cycle). Collecting
    when each module ends makes the warning fail the module that leaked it."""
    yield
    gc.collect()


@pytest.fixture
def app(make_config: Any, redis: Redis, client_class: type[FlaskClient]) -> Iterator[Flask]:
    application = create_app(make_config())
    application.test_client_class = client_class
    clean_database()
    projections.ensure_cursors()  # as create_app does on a fresh database
    try:
        with application.app_context():
            yield application
        _stop_background_threads()
    finally:
        clean_database()


@pytest.fixture
def redis(redis_url: str) -> Redis:
    r = Redis.from_url(redis_url)
    r.flushdb()
    return r


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def work(app: Flask, redis: Redis) -> Any:
    """Run the real RQ worker (SimpleWorker, burst) until the queues are empty."""

    def run() -> None:
        BurstWorker(list(QUEUES), connection=redis).work(burst=True, logging_level="WARNING")

    return run


@pytest.fixture
def runner(app: Flask) -> Any:
    return app.test_cli_runner()


@pytest.fixture
def smtp(app: Flask, make_config: Callable[..., Any]) -> Iterator[SmtpServer]:
    """The app sends through a real SMTP server on localhost."""
    server = SmtpServer()
    server.start()
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=server.port, smtp_timeout=2
    )
    try:
        yield server
    finally:
        server.inbox.hang.clear()
        server.stop()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    r = PrivateRedis(tmp_path / "private-redis" / "redis.sock")
    r.start()
    try:
        yield r
    finally:
        r.stop()


@pytest.fixture
def private(app: Any, make_config: Any) -> Iterator[tuple[procs.PrivateRedis, Redis]]:
    """A private Redis server (a test may stop or flush it), and this test's
    app (publish, reads) pointed at it: for the outage and stopping tests."""
    with procs.private_redis() as server:
        local = create_app(make_config(redis_url=server.url))
        with local.app_context():
            yield server, Redis.from_url(server.url)
