"""Run Alembic migrations from code (used by `flask db upgrade`, `make run`, tests)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config as AlembicConfig

from webapp.core.config import ROOT


def alembic_config(database_url: str) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)
