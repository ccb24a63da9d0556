"""Jobs for the stop tests, run by a real worker process. `hold` marks that it
started, waits until the test creates `release` in its folder, then marks that
it finished: the test decides when the job in hand ends, not a sleep.
`ask_database` fails while the database is unreachable."""

from __future__ import annotations

import os
import time
from pathlib import Path

from webapp.core import db

HOLD_FUNC = "tests.stop_jobs.hold"
ASK_DATABASE_FUNC = "tests.stop_jobs.ask_database"


def hold(folder: str) -> str:
    marks = Path(folder)
    (marks / "started").write_text(str(os.getpid()))
    deadline = time.monotonic() + 120
    while not (marks / "release").exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the test never released the job")
        time.sleep(0.05)
    with open(marks / "finished", "a") as fh:  # one line per run of the job
        fh.write(f"{os.getpid()}\n")
    return "released"


def ask_database() -> str:
    db.ping()
    return "answered"
