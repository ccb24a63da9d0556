"""The harness's database: a fresh SQLite file per test, copied from one
migrated template per process (migrating costs far more than a copy)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from webapp.migrate import upgrade

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
