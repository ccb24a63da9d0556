"""Behind PgBouncer in transaction pooling mode (docs/operations.md, "Scaling
out"): consecutive transactions of one client may run on different server
connections, so a statement the driver prepared on one server connection is
missing on the next. With DATABASE_POOLING=transaction the engine prepares
none; these tests start a real PgBouncer in front of the test PostgreSQL and
show both sides. (`.ci/run` also runs the concurrency-heavy tests through one:
TEST_PGBOUNCER=1.)"""

from __future__ import annotations

import configparser
import os
import re
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests.support import pgbouncer
from webapp.core import db
from webapp.core.config import ROOT, Config, ConfigError


@pytest.fixture
def bouncer(backend: str) -> Iterator[str]:
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: PgBouncer pools PostgreSQL connections")
    if not os.path.exists(pgbouncer.BINARY):
        if os.environ.get("REQUIRE_PGBOUNCER") == "1":
            pytest.fail(f"REQUIRE_PGBOUNCER=1 but {pgbouncer.BINARY} is missing")
        pytest.skip("pgbouncer is not installed (apt-get install pgbouncer)")
    url = os.environ["TEST_DATABASE_URL"]
    with pgbouncer.in_front_of(url) as through:
        yield through


def _hammer(url: str, pooling: str) -> list[str]:
    """8 threads, 40 transactions each, the same statement every time (the
    driver prepares a statement on the server from its 5th use)."""
    engine = db.make_engine(url, pooling=pooling)
    errors: list[str] = []

    def run() -> None:
        try:
            for i in range(40):
                with engine.begin() as conn:
                    assert conn.execute(text("SELECT :x + 1"), {"x": i}).scalar() == i + 1
        except Exception as exc:
            errors.append(str(exc).splitlines()[0])

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    return errors


def test_transaction_pooling_setting_keeps_every_statement_working(bouncer: str) -> None:
    assert make_url(bouncer).port != make_url(os.environ["TEST_DATABASE_URL"]).port
    assert _hammer(bouncer, "transaction") == []


def test_without_the_setting_prepared_statements_break_behind_the_pooler(bouncer: str) -> None:
    errors = _hammer(bouncer, "session")
    assert errors and all("prepared statement" in e for e in errors), errors


def _documented_settings() -> dict[str, str]:
    """The `[pgbouncer]` settings of the ini block in docs/operations.md."""
    text_ = (ROOT / "docs" / "operations.md").read_text()
    (block,) = re.findall(r"```ini\n(.*?)```", text_, re.S)
    parser = configparser.ConfigParser()
    parser.read_string(block)
    return dict(parser["pgbouncer"])


def test_the_documented_pgbouncer_setup_runs_the_product(backend: str) -> None:
    """The ini block of docs/operations.md, with this machine's address and
    authentication in place of the example's, and DATABASE_POOLING as the
    docs say: the same statements from many threads keep working."""
    settings = _documented_settings()
    assert settings["pool_mode"] == "transaction"
    pooling = {
        k: v
        for k, v in settings.items()
        if k not in ("listen_addr", "listen_port", "auth_type", "auth_file")
    }
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: PgBouncer pools PostgreSQL connections")
    with pgbouncer.in_front_of(os.environ["TEST_DATABASE_URL"], pooling) as through:
        assert _hammer(through, "transaction") == []


def test_database_pooling_is_validated_by_name(tmp_path) -> None:
    env = {"INSTANCE_PATH": str(tmp_path), "SECRET_KEY": "x" * 32}
    assert Config.from_env(env).database_pooling == "session"
    assert Config.from_env({**env, "DATABASE_POOLING": "transaction"}).database_pooling == (
        "transaction"
    )
    with pytest.raises(ConfigError, match="DATABASE_POOLING"):
        Config.from_env({**env, "DATABASE_POOLING": "statement"})
