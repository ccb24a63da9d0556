"""A full disk and a read-only database, for real:

- SQLite on a size-limited file system (a `tmpfs` of 8 MiB, mounted by the
  test; where mounting is not permitted, SQLite's own `PRAGMA max_page_count`
  makes the same SQLITE_FULL, for the web part only);
- a read-only SQLite file (`chattr +i`, which binds root too; `chmod 0444`
  for anyone else);
- PostgreSQL with `default_transaction_read_only` on the test database.

Each time: a write answers 503 with the product's error page (never a 500 or
a traceback), reads go on, `/healthz` and `/readyz` name the condition, the
refusal is counted for the DatabaseNotWritable alert, nothing committed is
lost, and once the condition ends writes succeed again without a restart.
On the full disk a real worker process's job that could not write is retried
and then done, exactly once.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

from tests import procs
from tests.support.accounts import register
from tests.support.metrics import delta, scrape
from tests.support.web import FreshGClient
from webapp import create_app
from webapp.core import db
from webapp.core.migrate import upgrade

REFUSED = "webapp_database_writes_refused_total"
UNAVAILABLE_TEXT = "briefly unavailable"


def users(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(conn.execute(text("SELECT email FROM users")).scalars())
    finally:
        engine.dispose()


def assert_refused(resp: Any) -> None:
    body = resp.get_data(as_text=True)
    assert resp.status_code == 503, (resp.status_code, body[:500])
    assert resp.headers["Retry-After"] == "5"
    assert UNAVAILABLE_TEXT in body and "<html" in body
    assert "Traceback" not in body


def assert_health(client: Any, condition: str) -> None:
    health = client.get("/healthz")
    ready = client.get("/readyz")
    assert health.status_code == ready.status_code == 503
    assert health.json["database"] == ready.json["database"] == condition


class SmallDisk:
    """A file system of `size` bytes at `path` (tmpfs), or, where this process
    may not mount one, SQLite's page limit on the app's connections."""

    def __init__(self, path: Path, size_mib: int = 8) -> None:
        path.mkdir()
        self.path = path
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        self.mounted = done.returncode == 0
        self.filler = path / "filler"
        self.limited = False

    def fill(self, engine: Any) -> None:
        """No room left: the log emptied (a checkpoint), then the rest taken."""
        with engine.connect() as conn:
            busy, _log, _done = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
            assert busy == 0
        if not self.mounted:
            self._limit_pages(engine)
            return
        with self.filler.open("wb", buffering=0) as fh:
            with contextlib.suppress(OSError):  # ENOSPC: full
                while True:
                    fh.write(b"\0" * 65536)

    def _limit_pages(self, engine: Any) -> None:
        @event.listens_for(engine, "connect")
        def _no_more_pages(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            pages = cur.execute("PRAGMA page_count").fetchone()[0]
            cur.execute(f"PRAGMA max_page_count={pages}")
            cur.close()

        self._listener = _no_more_pages
        engine.dispose()  # every connection from now on has the limit
        self.limited = True

    def free(self, engine: Any) -> None:
        if self.limited:
            event.remove(engine, "connect", self._listener)
            engine.dispose()
            self.limited = False
        self.filler.unlink(missing_ok=True)

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    disk = SmallDisk(tmp_path / "small")
    try:
        yield disk
    finally:
        disk.close()


@contextlib.contextmanager
def app_on(url: str, make_config: Any, **more: Any) -> Iterator[tuple[Any, Any]]:
    """An app of its own on `url` (this process's engine put back after)."""
    with db.engine_restored():
        app = create_app(make_config(database_url=url, **more))
        app.test_client_class = FreshGClient
        with app.app_context():
            yield app, app.test_client()


def test_a_full_disk_refuses_writes_with_503_and_everything_resumes_when_space_returns(
    small_disk, tmp_path, make_config, redis, redis_url, backend
):
    if backend != "sqlite":
        pytest.skip("the full disk is SQLite's: PostgreSQL's refusal is tested below")
    url = f"sqlite:///{small_disk.path / 'app.db'}"
    upgrade(url)
    with app_on(url, make_config) as (app, client):
        assert register(client, "first@example.com").status_code == 200  # its mail waits in Redis
        before = scrape(client)
        small_disk.fill(db.get_engine())

        assert_refused(register(client, "second@example.com"))
        assert client.get("/login").status_code == 200  # reads go on
        assert_health(client, "full")
        assert delta(scrape(client), before, REFUSED, condition="full") >= 1
        assert users(url) == ["first@example.com"]  # committed: kept; refused: not half-written

        if small_disk.mounted:  # a worker in a process of its own meets the full disk too
            env = procs.app_env(url, redis_url, tmp_path / "instance")
            worker = procs.worker(env, tmp_path / "worker.log")
            try:
                procs.until(
                    lambda: "database or Redis (job failed) unavailable" in worker.output(),
                    what="the mail's delivery refused by the full disk",
                )
                small_disk.free(db.get_engine())
                mails = tmp_path / "instance" / "mail"
                procs.until(
                    lambda: mails.is_dir() and any(mails.iterdir()),
                    what="the mail sent once space returned",
                )
                procs.until(lambda: "job retried after an outage" in worker.output())
            finally:
                worker.stop()
            assert len(list(mails.iterdir())) == 1  # retried, done once
        else:
            small_disk.free(db.get_engine())

        # no restart: the same process writes again, and says it is healthy
        assert register(client, "second@example.com").status_code == 200
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").json["database"] == "ok"
        assert users(url) == ["first@example.com", "second@example.com"]


def _immutable(path: Path, on: bool) -> None:
    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    if done.returncode != 0:  # not root, or no chattr: the mode bits then bind us
        path.chmod(0o444 if on else 0o644)
    assert os.access(path, os.W_OK) is not on


def test_a_read_only_sqlite_file_refuses_writes_and_they_resume_when_it_is_writable(
    tmp_path, make_config, redis, backend
):
    if backend != "sqlite":
        pytest.skip("a SQLite file")
    url = f"sqlite:///{tmp_path / 'ro.db'}"
    upgrade(url)
    path = tmp_path / "ro.db"
    with app_on(url, make_config) as (app, client):
        assert register(client, "first@example.com").status_code == 200
        # Connections opened from now on open the file read-only (SQLite's way
        # with a write-protected file); those already open would write to the log.
        _immutable(path, True)
        try:
            db.get_engine().dispose()
            assert_refused(register(client, "second@example.com"))
            assert client.get("/login").status_code == 200
            assert_health(client, "read-only")
        finally:
            _immutable(path, False)
        assert register(client, "second@example.com").status_code == 200  # no restart
        assert client.get("/healthz").status_code == 200
    assert users(url) == ["first@example.com", "second@example.com"]


@contextlib.contextmanager
def read_only_database(url: str) -> Iterator[None]:
    """`default_transaction_read_only` on the database (new sessions); an
    admin session of its own turns it on and off."""
    name = make_url(url).database
    admin = create_engine(url, isolation_level="AUTOCOMMIT")

    def setting(value: str) -> None:
        with admin.connect() as conn:
            conn.execute(text("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"))
            conn.execute(
                text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = {value}')
            )

    setting("on")
    try:
        yield
    finally:
        setting("off")
        admin.dispose()


def test_a_read_only_postgresql_refuses_writes_with_503_not_500_and_they_resume(
    app, client, database_url, backend
):
    if backend != "postgresql":
        pytest.skip("PostgreSQL's read-only transactions")
    assert register(client, "first@example.com").status_code == 200
    before = scrape(client)
    with read_only_database(database_url):
        db.get_engine().dispose()  # the setting binds sessions that start after it
        assert_refused(register(client, "second@example.com"))
        assert client.get("/login").status_code == 200
        assert_health(client, "read-only")
        assert delta(scrape(client), before, REFUSED, condition="read-only") >= 1
    # Writable again: the refused connections were dropped; a session opened
    # while it was read-only is refused once more at most, then dropped too.
    answers = [register(client, "second@example.com").status_code]
    if answers[0] != 200:
        answers.append(register(client, "second@example.com").status_code)
    assert answers[-1] == 200 and len(answers) <= 2, answers
    assert client.get("/healthz").status_code == 200
    assert users(database_url) == ["first@example.com", "second@example.com"]
    db.get_engine().dispose()  # no session of the read-only time is left for the clean-up
