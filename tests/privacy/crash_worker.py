"""A real worker process for the export crash test: while the file named by
EXPORT_HANG exists, building an export writes a mark and then hangs (the test
SIGKILLs the process there)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from webapp.privacy import bundle
from worker.run_worker import main as run_worker

_write_zip = bundle.write_zip


def _hanging_write_zip(*args: Any, **kwargs: Any) -> int:
    hang = Path(os.environ["EXPORT_HANG"])
    if hang.exists():
        (hang.parent / "building").write_text("yes")
        time.sleep(120)
    return _write_zip(*args, **kwargs)


def main() -> None:
    bundle.write_zip = _hanging_write_zip  # type: ignore[assignment]
    run_worker()
