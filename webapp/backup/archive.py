"""A backup on disk: one folder, complete or absent.

    PATH/
      manifest.json     what it is: when, which release and backend, the
                        database's figures (`contents`), every file's size and
                        SHA-256, where the secret key is
      database.sqlite   the SQLite copy (or database.pgdump: pg_dump's custom format)
      secret_key        the instance's generated key, when it is the one in use
      exports/          the data exports users may still download

The folder is written as `PATH.partial-<pid>` and renamed to PATH once
everything in it is written, checked and synced: a PATH that exists is a
whole backup. It holds personal data and the key that signs sessions, so it
is readable by its owner only (0700, files 0600).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_FILE = "database.sqlite"
PG_FILE = "database.pgdump"
SECRET_FILE = "secret_key"
EXPORTS = "exports"


class BackupError(Exception):
    """The backup cannot be made, read or restored; the message says why and
    what to do."""


def start(path: Path, replace: bool) -> Path:
    """The partial folder to write into, beside `path`."""
    if path.exists() and not replace:
        raise BackupError(f"{path} exists; choose a new path, or --replace to overwrite it")
    if path.exists() and not (path / MANIFEST).exists():
        raise BackupError(f"{path} exists and is not a backup (no {MANIFEST}): not replaced")
    if not path.parent.is_dir():
        raise BackupError(f"{path.parent} is not a folder")
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(mode=0o700)
    return partial


def finish(partial: Path, path: Path) -> None:
    """Sync every file, then put the folder in place (an older backup at
    `path` is removed only once the new one is there)."""
    for f in partial.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    old = None
    if path.exists():
        old = path.with_name(f"{path.name}.old-{os.getpid()}")
        path.rename(old)
    partial.rename(path)
    _sync_folder(path.parent)
    if old is not None:
        shutil.rmtree(old)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def files_of(folder: Path) -> dict[str, dict[str, Any]]:
    """Every file but the manifest: relative name -> size and SHA-256."""
    out = {}
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.name != MANIFEST:
            out[f.relative_to(folder).as_posix()] = {"bytes": f.stat().st_size, "sha256": sha256(f)}
    return out


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    target = folder / MANIFEST
    target.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    target.chmod(0o600)


def read_manifest(folder: Path) -> dict[str, Any]:
    target = folder / MANIFEST
    if not folder.is_dir():
        raise BackupError(f"{folder} is not a folder")
    try:
        manifest = json.loads(target.read_text())
    except FileNotFoundError:
        raise BackupError(f"{folder} is not a backup: no {MANIFEST}") from None
    except ValueError as exc:
        raise BackupError(f"{target} is damaged: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(
            f"{target}: unknown format {manifest.get('format')!r} (expected {FORMAT})"
        )
    return manifest


def damaged_files(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """Files missing, changed or added since the backup was written."""
    listed: dict[str, dict[str, Any]] = manifest.get("files", {})
    found = files_of(folder)
    problems = [f"{name}: missing" for name in listed if name not in found]
    problems += [
        f"{name}: changed (SHA-256 differs)"
        for name, info in found.items()
        if name in listed and info != listed[name]
    ]
    problems += [f"{name}: not part of the backup" for name in found if name not in listed]
    return problems


def copy_tree(source: Path, target: Path) -> int:
    """Copy the files under `source` (if any) into `target`; how many."""
    if not source.is_dir():
        return 0
    n = 0
    for f in sorted(source.rglob("*")):
        if f.is_file():
            dest = target / f.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.copy2(f, dest)
            dest.chmod(0o600)
            n += 1
    return n


def key_fingerprint(key: str) -> str:
    """Which key, without the key: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]
