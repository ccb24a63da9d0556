"""The release's version is written once, in pyproject.toml, and read from the
installed distribution: `flask about` and `/healthz` show it (the console's
footer too, tests/admin/test_footer.py). `flask about` names the Python, the
database and the Redis in use, never a password, user or URL query."""

from __future__ import annotations

import platform
import tomllib
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from sqlalchemy.engine import make_url

from tests import procs
from webapp.cli import about_lines
from webapp.core import version
from webapp.core.config import ROOT

RELEASE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_version_is_pyprojects_as_installed() -> None:
    # Fails on a stale install (pyproject.toml changed, no `make` or pip install since).
    assert version.VERSION == RELEASE
    assert version.read("no-such-distribution-of-ours") == version.UNKNOWN == "0+unknown"


def test_healthz_names_the_version(client: Any) -> None:
    body = client.get("/healthz").get_json()
    assert body == {"status": "ok", "database": "ok", "version": RELEASE}


def test_flask_about_prints_version_python_database_and_redis(
    app: Flask, database_url: str, redis_url: str, tmp_path: Any
) -> None:
    env = procs.app_env(database_url, redis_url, tmp_path / "instance")
    out = procs.flask(env, "about")
    assert out.returncode == 0, out.stderr
    shown = dict(line.split(None, 1) for line in out.stdout.splitlines())
    assert list(shown) == ["version", "python", "database", "redis"]
    assert shown["version"] == RELEASE
    assert shown["python"] == f"{platform.python_version()} ({platform.python_implementation()})"
    assert shown["database"].startswith(make_url(database_url).drivername + " ")
    redis = urlsplit(redis_url)
    assert (redis.hostname or redis.path) in shown["redis"]


def test_flask_about_shows_no_secret(app: Flask) -> None:
    cfg = replace(
        app.config["APP_CONFIG"],
        database_url="postgresql+psycopg://app:db-s3cret@db.internal:5433/app?password=q-s3cret",
        redis_url="rediss://default:redis-s3cret@cache.internal:6380/2?password=r-s3cret",
        redis_embedded=False,
    )
    lines = about_lines(cfg)
    assert lines[2:] == [
        "database  postgresql+psycopg db.internal:5433/app",
        "redis     rediss://cache.internal:6380/2",
    ]
    embedded = replace(cfg, redis_url="unix:///srv/app/instance/redis.sock", redis_embedded=True)
    assert about_lines(embedded)[3] == "redis     embedded unix:///srv/app/instance/redis.sock"
    sqlite = replace(cfg, database_url="sqlite:////srv/app/instance/app.db")
    assert about_lines(sqlite)[2] == "database  sqlite /srv/app/instance/app.db"
    assert "s3cret" not in "\n".join(about_lines(cfg))
