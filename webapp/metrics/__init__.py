"""Prometheus metrics: the instruments (`instruments`), the `/metrics` route and
its guard (`web`), the gauges read at scrape time from the database and Redis
(`gauges`), and the run counters fed by the run events (`run_counters`).

Every process type (gunicorn's workers, the RQ workers, the scheduler) counts
in prometheus_client's multiprocess mode: each process writes its samples to
memory-mapped files in one directory, and `/metrics` on any web process sums
the files of every process on the host. So a run completed in the worker shows
up on the web's `/metrics`, and two gunicorn workers are one web service.

prometheus_client picks multiprocess mode when its package is imported, from
`PROMETHEUS_MULTIPROC_DIR`; this package (which every process imports before
prometheus_client: nothing else of ours imports it) sets that variable, when
it is unset, to `<instance>/metrics` (`INSTANCE_PATH`, in the environment or
`.env`, as `webapp.core.config` reads it). `make run` empties that directory when it
starts; in production empty it before the processes start (docs/operations.md,
"Monitoring").
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from webapp.core.config import ROOT

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> Path:
    """Where this host's processes keep their samples."""
    chosen = os.environ.get(MULTIPROC_ENV)
    if chosen:
        return Path(chosen)
    instance = os.environ.get("INSTANCE_PATH") or dotenv_values(ROOT / ".env").get("INSTANCE_PATH")
    return Path(instance or ROOT / "instance").resolve() / "metrics"


def _choose() -> None:
    path = multiprocess_dir()
    os.environ.setdefault(MULTIPROC_ENV, str(path))
    path.mkdir(parents=True, exist_ok=True)


_choose()
