"""In-process wake-ups on PostgreSQL (`webapp.workflows.dispatch.pg_wake`):
the commit that makes a run due wakes a real worker's listener by NOTIFY,
with no Redis on the way; listeners share the requests between them; where
the listener connects follows the settings."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

import tests.backup.flows  # noqa: F401  (registers bk-order here too: the inline wake-up)
from tests import procs
from tests.support import pgbouncer
from webapp import create_app
from webapp.core import db
from webapp.core.config import Config, ConfigError
from webapp.eventstore import projections
from webapp.publish import publish
from webapp.workflows.dispatch import pg_wake
from webapp.workflows.store import run_events as ev

MODULE = "tests.backup.flows"


def _run(order: str) -> Any:
    with db.reading() as conn:
        return conn.execute(
            text(
                "SELECT run_id, status, step_index FROM workflow_runs"
                " WHERE workflow_name = 'bk-order' AND subject_id = :o"
            ),
            {"o": order},
        ).first()


def _listeners() -> list[int]:
    with db.reading() as conn:
        return [int(r[0]) for r in conn.execute(text(pg_wake.LISTENERS_SQL))]


def _docs_query() -> str:
    """The query docs/operations.md gives operators to see the listeners."""
    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    found = re.search(r'-c "(SELECT [^"]*webapp-wf-listen[^"]*)"', doc)
    assert found, "docs/operations.md shows how to see the listeners"
    return found.group(1)


def _mounted() -> bool:
    with db.reading() as conn:
        return any(r["name"] == "workflow-bk-order" for r in projections.status(conn))


def _woken_without_redis(server: Any, env: dict[str, str], tmp_path: Path) -> None:
    """A real worker on `env`; a run waits for its payment; Redis stops; the
    payment published here wakes the run through the database alone."""
    worker = procs.worker(env, tmp_path / "worker.log")
    try:
        procs.until(lambda: len(_listeners()) == 1, what="the worker's listener")
        with db.reading() as conn:  # what the docs tell an operator to run shows it
            assert [r.pid for r in conn.execute(text(_docs_query()))] == _listeners()
        procs.until(_mounted, what="trigger cursor mounted by the worker")
        publish("bk.placed", "order", "o1", {"order": "o1"})
        procs.until(
            lambda: (r := _run("o1")) is not None and r.status == "suspended" and r.step_index == 1,
            what="the run waits for its payment",
        )
        server.stop()  # from here on, nothing can go through Redis
        publish("bk.paid", "payment", "o1", {"order": "o1"})
        procs.until(
            lambda: _run("o1").status == "completed",
            timeout=20,
            what="the run resumed without Redis",
        )
        with db.reading() as conn:
            resumed = conn.execute(
                text("SELECT count(*) FROM events WHERE aggregate_id = :r AND type = :t"),
                {"r": _run("o1").run_id, "t": ev.STEP_RESUMED},
            ).scalar_one()
        assert resumed == 2  # the timer's, then the payment's: once each
    finally:
        worker.stop()
    assert "Traceback" not in worker.output(), worker.output()[-3000:]


def test_an_awaited_event_wakes_the_worker_by_notify_while_redis_is_down(
    private: Any, database_url: str, tmp_path: Path, backend: str, make_config: Any
) -> None:
    if backend != "postgresql":
        pytest.skip("PostgreSQL's LISTEN/NOTIFY: SQLite wakes through Redis")
    server, _r = private
    env = procs.app_env(
        database_url,
        server.url,
        tmp_path / "instance",
        WORKFLOW_MODULES=MODULE,
        WORKFLOW_WAKE="notify",
    )
    with db.engine_restored():
        app = create_app(make_config(redis_url=server.url, workflow_wake="notify"))
        with app.app_context():
            _woken_without_redis(server, env, tmp_path)


def test_behind_pgbouncer_the_listener_uses_the_direct_url(
    private: Any, database_url: str, tmp_path: Path, backend: str, make_config: Any
) -> None:
    """Everything goes through a transaction-pooling PgBouncer, as the docs
    set it up, except each worker's LISTEN (DATABASE_DIRECT_URL)."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL's LISTEN/NOTIFY: SQLite wakes through Redis")
    if not Path(pgbouncer.BINARY).exists() and os.environ.get("REQUIRE_PGBOUNCER") != "1":
        pytest.skip("pgbouncer is not installed (apt-get install pgbouncer)")
    server, _r = private
    with pgbouncer.in_front_of(database_url) as through, db.engine_restored():
        pooled = dict(
            DATABASE_POOLING="transaction",
            DATABASE_DIRECT_URL=database_url,
            WORKFLOW_WAKE="notify",
        )
        env = procs.app_env(
            through, server.url, tmp_path / "instance", WORKFLOW_MODULES=MODULE, **pooled
        )
        app = create_app(
            make_config(
                database_url=through,
                database_pooling="transaction",
                database_direct_url=database_url,
                redis_url=server.url,
                workflow_wake="notify",
            )
        )
        with app.app_context():
            _woken_without_redis(server, env, tmp_path)


def test_listeners_share_the_requests_each_to_exactly_one() -> None:
    listeners = [101, 205, 307]
    requests = [f"default|run-{i}|{i % 3}" for i in range(300)]
    payloads = ["\n".join(requests[:150]), "\n".join(requests[150:])]
    taken = [pg_wake.mine(payloads, me, listeners) for me in listeners]
    assert sorted(r for t in taken for r in t) == sorted(requests)  # each once
    assert all(len(t) > 50 for t in taken)  # spread over all three
    assert pg_wake.mine(payloads, 999, listeners) == requests  # not seen yet: all


def _config(**env: str) -> Config:
    return Config.from_env({"SECRET_KEY": "k" * 32, **env})


def test_where_the_listener_connects_follows_the_settings(tmp_path: Path) -> None:
    pg = "postgresql+psycopg://app@db:5432/app"
    direct = "postgresql+psycopg://app@db-direct:5432/app"
    assert _config(DATABASE_URL=pg).listen_url is None  # the default: through Redis
    notify = {"WORKFLOW_WAKE": "notify"}
    assert _config(DATABASE_URL=pg, **notify).listen_url == pg
    assert _config(DATABASE_URL=pg, DATABASE_POOLING="transaction", **notify).listen_url is None
    pooled = _config(
        DATABASE_URL=pg, DATABASE_POOLING="transaction", DATABASE_DIRECT_URL=direct, **notify
    )
    assert pooled.listen_url == direct
    assert _config(INSTANCE_PATH=str(tmp_path), **notify).listen_url is None  # SQLite
    with pytest.raises(ConfigError, match="DATABASE_DIRECT_URL needs DATABASE_URL on PostgreSQL"):
        _config(INSTANCE_PATH=str(tmp_path), DATABASE_DIRECT_URL=direct)
    with pytest.raises(ConfigError, match="WORKFLOW_WAKE must be one of"):
        _config(DATABASE_URL=pg, WORKFLOW_WAKE="carrier-pigeon")
    assert pg_wake.libpq_url(direct) == "postgresql://app@db-direct:5432/app"
