"""Taking a backup (`flask backup create PATH`) and checking one
(`flask backup verify PATH`)."""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from webapp.backup import archive, contents, pg_dump, sqlite_copy
from webapp.backup.archive import BackupError
from webapp.core.config import Config
from webapp.core.version import VERSION


def backend_of(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql"


def _secret_key(cfg: Config, folder: Path) -> dict[str, str]:
    """The instance's generated key is copied; a SECRET_KEY set in the
    environment is not (it lives with the deployment's other secrets): the
    manifest says which, with the key's fingerprint either way."""
    fingerprint = archive.key_fingerprint(cfg.secret_key)
    generated = cfg.instance_path / "secret_key"
    if generated.exists() and generated.read_text().strip() == cfg.secret_key:
        shutil.copyfile(generated, folder / archive.SECRET_FILE)
        (folder / archive.SECRET_FILE).chmod(0o600)
        return {"where": archive.SECRET_FILE, "fingerprint": fingerprint}
    return {"where": "SECRET_KEY in the environment (not copied)", "fingerprint": fingerprint}


def create(cfg: Config, path: Path, replace: bool = False, exports: bool = True) -> dict[str, Any]:
    """Write a backup of the running product to `path`; returns its manifest."""
    started = time.monotonic()
    backend = backend_of(cfg.database_url)
    partial = archive.start(path, replace)
    try:
        if backend == "sqlite":
            target = partial / archive.SQLITE_FILE
            sqlite_copy.copy(sqlite_copy.database_path(cfg.database_url), target)
            problems = sqlite_copy.integrity(target)
            if not problems:
                engine = sqlite_copy.read_only(target)
                try:
                    with engine.connect() as conn:
                        figures = contents.summary(conn)
                finally:
                    engine.dispose()
        else:
            target = partial / archive.PG_FILE
            figures = pg_dump.dump(cfg.database_url, target)
            problems = pg_dump.check(target)
        if problems:
            raise BackupError("the copy failed its check: " + "; ".join(problems[:5]))
        secret = _secret_key(cfg, partial)
        n_exports = (
            archive.copy_tree(cfg.exports_path, partial / archive.EXPORTS) if exports else None
        )
        manifest = {
            "format": archive.FORMAT,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "release": VERSION,
            "backend": backend,
            "database": target.name,
            "contents": figures,
            "secret_key": secret,
            "exports": n_exports if n_exports is not None else "not included (--no-exports)",
            "files": archive.files_of(partial),
            "seconds": round(time.monotonic() - started, 2),
        }
        archive.write_manifest(partial, manifest)
        archive.finish(partial, path)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return manifest


def verify(path: Path) -> tuple[dict[str, Any], list[str]]:
    """(manifest, problems): every file as written, and the database copy
    whole (SQLite's integrity check; pg_restore reads the dump through)."""
    manifest = archive.read_manifest(path)
    problems = archive.damaged_files(path, manifest)
    database = path / str(manifest.get("database", ""))
    if not problems:
        if manifest.get("backend") == "sqlite":
            problems = sqlite_copy.integrity(database)
        else:
            problems = pg_dump.check(database)
    return manifest, problems
