"""The harness's database and app settings: a fresh SQLite file per test,
copied from one migrated template per process (migrating costs far more than
a copy), and a configuration that needs no Redis."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webapp.core.config import Config
from webapp.core.migrate import upgrade

# Cheap password hashing and in-memory rate limits: tests that create accounts
# stay fast and need no Redis.
DEFAULTS: dict[str, Any] = {
    "argon2_time_cost": 1,
    "argon2_memory_cost": 1024,
    "argon2_parallelism": 1,
    "ratelimit_storage": "memory://",
}

_template: Path | None = None


def _migrated_template() -> Path:
    global _template
    if _template is None:
        folder = Path(tempfile.mkdtemp(prefix="webapp-wf-template-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "template.db"
        # Alembic opens and closes its own engine: the file is complete (no WAL left).
        upgrade(f"sqlite:///{path}")
        _template = path
    return _template


def fresh_database(folder: Path) -> str:
    """A migrated, empty SQLite database in `folder`; its URL."""
    path = folder / "workflows.db"
    shutil.copyfile(_migrated_template(), path)
    return f"sqlite:///{path}"


def config_for(
    folder: Path, url: str, secrets: Mapping[str, str], overrides: Mapping[str, Any]
) -> Config:
    values: dict[str, Any] = dict(
        instance_path=folder / "instance",
        database_url=url,
        # Nothing listens there: the harness never needs Redis.
        redis_url=f"unix://{folder / 'no-redis.sock'}",
        redis_embedded=False,
        secret_key="workflow-test-secret-key-0123456789",
        testing=True,
        base_url="http://localhost",
        secrets=dict(secrets),
        **DEFAULTS,
    )
    values.update(overrides)
    (folder / "instance").mkdir(exist_ok=True)
    return Config(**values)
