"""Work done once when the app is built, not in every request: templates are
compiled at start-up and never re-read from disk in production; the signed
session cookie's serializer is built once per key; the database pool is real
on SQLite files too."""

from __future__ import annotations

from typing import Any

from sqlalchemy.pool import QueuePool

from webapp import create_app, db


def test_a_production_app_compiles_every_template_at_start_up(make_config: Any) -> None:
    app = create_app(make_config(testing=False))
    env = app.jinja_env
    assert env.auto_reload is False  # no mtime check per render
    names = env.list_templates(extensions=("html",))
    assert "profile/page.html" in names and "base.html" in names
    cached = {key[1] for key in (env.cache or {})}
    assert set(names) <= cached


def test_the_session_cookie_serializer_is_built_once_per_key(app: Any) -> None:
    iface = app.session_interface
    first = iface.get_signing_serializer(app)
    assert first is not None and iface.get_signing_serializer(app) is first
    app.secret_key = "another secret key, at least 16"
    assert iface.get_signing_serializer(app) is not first


def test_connections_are_pooled_on_both_backends(app: Any) -> None:
    engine = db.get_engine()
    assert isinstance(engine.pool, QueuePool)
    with db.reading() as conn:
        first = conn.connection.dbapi_connection
    with db.reading() as conn:
        assert conn.connection.dbapi_connection is first  # the same connection, reused
