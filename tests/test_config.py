"""Configuration: defaults, and invalid values fail at start-up naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.config import Config, ConfigError


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"INSTANCE_PATH": str(tmp_path), **values}


def test_defaults_use_sqlite_under_instance_and_embedded_redis(tmp_path):
    cfg = Config.from_env(env(tmp_path))
    assert cfg.database_url == f"sqlite:///{tmp_path / 'app.db'}"
    assert cfg.redis_embedded and cfg.redis_url == f"unix://{tmp_path / 'redis.sock'}"
    assert (cfg.host, cfg.port) == ("127.0.0.1", 5000)


def test_secret_key_is_generated_once_and_kept(tmp_path):
    first = Config.from_env(env(tmp_path)).secret_key
    second = Config.from_env(env(tmp_path)).secret_key
    assert first == second and len(first) >= 32
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0
    assert Config.from_env(env(tmp_path / "other")).secret_key != first


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PORT", "eighty"),
        ("PORT", "70000"),
        ("DATABASE_URL", "mysql://x"),
        ("REDIS_URL", "localhost:6379"),
        ("SESSION_COOKIE_SECURE", "maybe"),
        ("MAIL_BACKEND", "pigeon"),
        ("SMTP_SECURITY", "tls1.0"),
        ("PASSWORD_MIN_LENGTH", "3"),
        ("ACCOUNT_DELETION_GRACE_DAYS", "-1"),
        ("SECRET_KEY", "short"),
        ("LOG_LEVEL", "LOUD"),
        ("SCHEDULER_RESYNC_SECONDS", "0"),
        ("WORKFLOW_MODULES", "myapp/flows.py"),
    ],
)
def test_invalid_values_name_the_variable(tmp_path, name, value):
    with pytest.raises(ConfigError, match=name):
        Config.from_env(env(tmp_path, **{name: value}))


def test_postgres_url_is_normalised_to_psycopg(tmp_path):
    cfg = Config.from_env(
        env(tmp_path, DATABASE_URL="postgresql://u@h/db", REDIS_URL="redis://h:6379/0")
    )
    assert cfg.database_url == "postgresql+psycopg://u@h/db"
    assert not cfg.redis_embedded


def test_named_secrets_come_from_secret_variables(tmp_path):
    cfg = Config.from_env(env(tmp_path, SECRET_GITHUB_HOOK="abc", SECRET_KEY="x" * 20))
    assert cfg.secrets == {"github_hook": "abc"}
