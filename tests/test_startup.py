"""Work done once when the app is built, not in every request: templates are
compiled at a web server's start-up and never re-read from disk in production;
the signed session cookie's serializer is built once per key; the database pool
is real on SQLite files too. And work not done when the app is built for a
`flask ...` command: no template compiled, nothing imported that only some
commands or pages need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.pool import QueuePool

from tests import procs
from webapp import create_app
from webapp.core import db


def test_a_production_web_server_compiles_every_template_at_start_up(
    make_config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVER_SOFTWARE", "gunicorn/23.0.0")  # set by gunicorn's master
    app = create_app(make_config(testing=False))
    env = app.jinja_env
    assert env.auto_reload is False  # no mtime check per render
    names = env.list_templates(extensions=("html",))
    assert "profile/page.html" in names and "base.html" in names
    cached = {key[1] for key in (env.cache or {})}
    assert set(names) <= cached


# What `flask --app wsgi <command>` does before its command: import wsgi (which
# builds the app). Modules only some commands or pages need must not be in it.
CLI_PROBE = """
import json, sys
import wsgi
print(json.dumps({
    "compiled": len(wsgi.app.jinja_env.cache or {}),
    "imported": sorted(m for m in ("alembic", "segno", "httpx") if m in sys.modules),
}))
"""


def test_a_flask_command_compiles_no_template_and_imports_only_what_it_needs(
    database_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = procs.app_env(database_url, redis_url, tmp_path / "instance")
    env.pop("SERVER_SOFTWARE", None)
    out = subprocess.run(
        [sys.executable, "-c", CLI_PROBE],
        cwd=procs.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    # Alembic: `db upgrade` and a web process's first /readyz; segno: the
    # authenticator app's QR code; httpx: a webhook step. Each imports its own.
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"compiled": 0, "imported": []}


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
