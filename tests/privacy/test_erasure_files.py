"""Erasure leaves no readable copy in the database files: after the erase job,
the erased address is in neither SQLite's database file nor its write-ahead log
(`PRAGMA secure_delete` zeroes what a delete frees; the job then checkpoints and
truncates the log, which still held the pages as they were before).

Each test here has its own SQLite file, whatever TEST_DATABASE_URL says: the
raw bytes grepped must be this test's alone. PostgreSQL's guarantee is a
different one (docs/privacy.md, "What erasure leaves behind")."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.accounts import PASSWORD, login, register, user_row
from tests.support.web import post
from webapp.accounts.erase_accounts import erase_accounts
from webapp.core.migrate import upgrade

ADDRESS = "zeynep.probe-4711@example.org"


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    upgrade(url)
    return url


def _raw(database_url: str) -> bytes:
    path = Path(database_url.removeprefix("sqlite:///"))
    files = [path, path.with_name(path.name + "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def _needles() -> list[bytes]:
    # The address as typed and as any encoding a row or index could hold it in.
    local = ADDRESS.split("@")[0]
    return [ADDRESS.encode(), ADDRESS.upper().encode(), local.encode(), ADDRESS.encode("utf-16-le")]


def test_the_erased_address_is_not_in_the_raw_sqlite_files(
    app: Any, database_url: str, clock: Any, work: Any
) -> None:
    client = app.test_client()
    register(client, ADDRESS)
    work()  # the verification mail is sent (and its row written)
    assert login(client, ADDRESS).status_code == 302
    assert post(client, "/privacy/delete", current_password=PASSWORD).status_code == 200
    work()
    assert ADDRESS.encode() in _raw(database_url)  # the probe can see what is there

    clock.advance(timedelta(days=14, seconds=1))
    erase_accounts("default", clock.now())

    assert user_row(ADDRESS) is None
    raw = _raw(database_url)
    found = [n for n in _needles() if n in raw]
    assert found == [], f"the erased address is still readable in the database files: {found}"


def test_a_job_that_erases_nothing_leaves_the_files_alone(
    app: Any, database_url: str, clock: Any
) -> None:
    client = app.test_client()
    register(client, ADDRESS)
    erase_accounts("default", clock.now())
    assert user_row(ADDRESS) is not None
    assert ADDRESS.encode() in _raw(database_url)  # nothing erased, nothing shredded
