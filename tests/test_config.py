"""Configuration: defaults, and invalid values fail at start-up naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.core.config import Config, ConfigError


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"INSTANCE_PATH": str(tmp_path), **values}


def test_defaults_use_sqlite_under_instance_and_embedded_redis(tmp_path):
    cfg = Config.from_env(env(tmp_path))
    assert cfg.database_url == f"sqlite:///{tmp_path / 'app.db'}"
    assert cfg.redis_embedded and cfg.redis_url == f"unix://{tmp_path / 'redis.sock'}"
    assert (cfg.host, cfg.port) == ("127.0.0.1", 5000)


def test_base_url_defaults_to_localhost_on_port_where_browsers_allow_passkeys(tmp_path):
    """Not 127.0.0.1: browsers refuse passkeys on an IP address (issue 34, point 1)."""
    assert Config.from_env(env(tmp_path)).base_url == "http://localhost:5000"
    assert Config.from_env(env(tmp_path, PORT="8123")).base_url == "http://localhost:8123"
    given = Config.from_env(env(tmp_path, BASE_URL="https://accounts.example.com/"))
    assert given.base_url == "https://accounts.example.com"


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


def test_repr_never_shows_a_secret(tmp_path):
    cfg = Config.from_env(
        env(
            tmp_path,
            SECRET_KEY="k" * 16 + "-topsecret",
            SMTP_PASSWORD="smtp-hunter2",
            SECRET_GITHUB_HOOK="hook-value-123",
            DATABASE_URL="postgresql://app:db-pass-9@db.internal/app",
            REDIS_URL="redis://:redis-pass-7@cache:6379/0",
            RATELIMIT_STORAGE_URI="redis://user:rl-pass-5@cache:6379/1",
        )
    )
    for text in (repr(cfg), str(cfg), f"{cfg}"):
        for secret in (
            "topsecret",
            "smtp-hunter2",
            "hook-value-123",
            "db-pass-9",
            "redis-pass-7",
            "rl-pass-5",
        ):
            assert secret not in text
        assert "secret_key='***'" in text and "smtp_password='***'" in text
        assert "'github_hook': '***'" in text  # which secrets exist stays visible
        assert "postgresql+psycopg://app:***@db.internal/app" in text
        assert "smtp_host='localhost'" in text  # the rest is shown as before


def test_trusted_proxies_defaults_to_none_and_is_bounded(tmp_path):
    assert Config.from_env(env(tmp_path)).trusted_proxies == 0
    assert Config.from_env(env(tmp_path, TRUSTED_PROXIES="2")).trusted_proxies == 2
    for bad in ("-1", "many", "11"):
        with pytest.raises(ConfigError, match="TRUSTED_PROXIES"):
            Config.from_env(env(tmp_path, TRUSTED_PROXIES=bad))
