"""A worker SIGKILLed while building an export: another worker resumes the run
(heartbeated leases, no sweep needed) and the job still ends done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tests.procs import app_env, until
from webapp.core import db
from webapp.core.config import ROOT
from webapp.privacy import exports
from webapp.privacy.tables import export_jobs


def _worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-c", "from tests.privacy.crash_worker import main; main()"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _status() -> str | None:
    with db.reading() as conn:
        return conn.execute(select(export_jobs.c.status)).scalar()


def test_worker_killed_while_building_the_job_still_ends_done(
    app: Any, user: Any, database_url: str, redis_url: str, tmp_path: Path
) -> None:
    hang = tmp_path / "hang"
    hang.touch()
    exports_dir = tmp_path / "exports"
    env = app_env(
        database_url,
        redis_url,
        tmp_path / "instance",
        EXPORT_DIR=str(exports_dir),
        EXPORT_HANG=str(hang),
        LOG_LEVEL="WARNING",
    )
    assert exports.request_export(user).ok
    doomed = _worker(env, tmp_path / "doomed.log")
    survivor = None
    try:
        until(lambda: (tmp_path / "building").exists(), what="the build started")
        assert _status() == "running"
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
        hang.unlink()
        survivor = _worker(env, tmp_path / "survivor.log")
        until(lambda: _status() in ("done", "failed"), timeout=120, what="the job ended")
    finally:
        for proc in (doomed, survivor):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert _status() == "done"
    assert len(list(exports_dir.glob("*.zip"))) == 1
    assert list(exports_dir.glob("*.partial")) == []
