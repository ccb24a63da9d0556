"""The web side while the database goes away and comes back: /healthz says so
(503, JSON), pages answer 503 "briefly unavailable" without signing anyone
out, and once the database is back the next request is served; a read holds no
transaction open on PostgreSQL. PostgreSQL is taken away behind a TCP relay
(tests/procs.py), never by stopping the shared server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from flask import Flask
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests import procs
from tests.helpers import statements
from tests.support.accounts import login, register
from tests.support.web import FreshGClient
from webapp import create_app
from webapp.core import db
from webapp.core.version import VERSION

ADDRESS = "ada@example.com"


def test_healthz_is_json_not_stored_and_asks_the_database(app: Flask, make_config: Any) -> None:
    resp = app.test_client().get("/healthz")
    assert resp.status_code == 200
    assert resp.get_json() == {"status": "ok", "database": "ok", "version": VERSION}
    assert resp.headers["Cache-Control"] == "no-store"

    every_time = create_app(make_config(healthz_cache_ms=0)).test_client()
    with statements() as sql:
        for _ in range(3):
            assert every_time.get("/healthz").status_code == 200
    assert sql.count("SELECT 1") == 3


def test_healthz_asks_the_database_once_per_cache_window(make_config: Any, app: Flask) -> None:
    client = create_app(make_config(healthz_cache_ms=60_000)).test_client()
    with statements() as sql:
        for _ in range(20):
            assert client.get("/healthz").status_code == 200
    assert sql.count("SELECT 1") == 1


@pytest.fixture
def relayed(app: Flask, make_config: Any, database_url: str, backend: str) -> Iterator[Any]:
    """This test's app, on PostgreSQL through a relay that can be cut."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: a SQLite file has no outage")
    url = make_url(database_url)
    relay = procs.TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    relay.start()
    via = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    local = create_app(make_config(database_url=via, healthz_cache_ms=0))
    local.test_client_class = FreshGClient  # a fresh `g` per request, as under a server
    try:
        with local.app_context():
            yield local, relay
    finally:
        relay.stop()
        db.init_engine(database_url)  # the `app` fixture cleans up through it


def test_database_outage_answers_503_and_the_first_request_after_it_is_served(
    relayed: Any,
) -> None:
    local, relay = relayed
    client = local.test_client()
    register(client, ADDRESS)
    login(client, ADDRESS)
    assert ADDRESS in client.get("/profile").get_data(as_text=True)

    relay.stop()
    health = client.get("/healthz")
    assert health.status_code == 503
    assert health.get_json() == {
        "status": "unavailable",
        "database": "unreachable",
        "version": VERSION,
    }
    assert health.headers["Retry-After"] == "5"
    for path, headers in (("/profile", {}), ("/privacy", {}), ("/login", {"HX-Request": "true"})):
        page = client.get(path, headers=headers)
        assert page.status_code == 503, (path, page.get_data(as_text=True)[:3000])
        assert "briefly unavailable" in page.get_data(as_text=True), path
        assert page.headers["Retry-After"] == "5"
        assert "Set-Cookie" not in page.headers, path  # nobody is signed out by an outage

    relay.start()
    time.sleep(db.ALIVE_BYPASS_SECONDS + 0.2)  # the pool's connections now count as idle
    assert client.get("/healthz").status_code == 200
    page = client.get("/profile")
    assert page.status_code == 200
    assert ADDRESS in page.get_data(as_text=True)


def _terminate_app_connections(database_url: str) -> int:
    url = make_url(database_url)
    with psycopg.connect(
        host=url.host, port=url.port, user=url.username, dbname=url.database, autocommit=True
    ) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        ).fetchall()
    return len(rows)


def test_server_side_disconnects_cost_at_most_one_request(
    app: Flask, backend: str, database_url: str
) -> None:
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: a SQLite file has no server connections")
    client = app.test_client()
    register(client, ADDRESS)
    login(client, ADDRESS)
    assert client.get("/profile").status_code == 200

    # Killed while idle in the pool for longer than the bypass window: the
    # checkout's ping finds it dead and takes a new connection.
    assert _terminate_app_connections(database_url) >= 1
    time.sleep(db.ALIVE_BYPASS_SECONDS + 0.2)
    assert client.get("/profile").status_code == 200

    # Killed just after use: the one request that meets it gets the 503 page,
    # the pool is then replaced and everything after is served.
    assert client.get("/profile").status_code == 200
    _terminate_app_connections(database_url)
    answers = [client.get("/profile").status_code for _ in range(5)]
    assert answers.count(503) <= 1 and set(answers) <= {200, 503}, answers
    assert answers[-1] == 200


def test_a_postgresql_read_holds_no_transaction_between_its_statements(
    app: Flask, backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("PostgreSQL only (SQLite reads keep one snapshot in a deferred transaction)")
    started = text("SELECT xact_start FROM pg_stat_activity WHERE pid = pg_backend_pid()")
    with db.reading() as conn:
        first = conn.execute(started).scalar()
        conn.execute(text("SELECT pg_sleep(0.01)"))
        assert conn.execute(started).scalar() != first
    with db.transaction() as conn:
        first = conn.execute(started).scalar()
        conn.execute(text("SELECT pg_sleep(0.01)"))
        assert conn.execute(started).scalar() == first
