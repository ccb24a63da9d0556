"""`make run`'s use of the health ports: before the children start, a fresh
metrics directory (the samples of an earlier run are gone) and a health port
for the worker and the scheduler (`PORT`+1 and `PORT`+2 unless set); while
they run, a child whose port answers 503 twice in a row (a loop stuck) is
stopped, and the supervisor starts it again as it does any child that exits."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import httpx

from webapp.core.config import Config
from webapp.metrics import multiprocess_dir

PROBE_EVERY_S = 5.0
STRIKES = 2  # answers of 503 in a row before a child is restarted


def prepare(cfg: Config, env: dict[str, str]) -> None:
    for stale in multiprocess_dir().glob("*.db"):
        stale.unlink(missing_ok=True)
    env.setdefault("WORKER_HEALTH_PORT", str(cfg.port + 1))
    env.setdefault("SCHEDULER_HEALTH_PORT", str(cfg.port + 2))


class Probe:
    """Asks the worker's and the scheduler's health ports every few seconds."""

    def __init__(self, cfg: Config, env: dict[str, str]) -> None:
        self.host = cfg.host
        self.ports = {
            "worker": env["WORKER_HEALTH_PORT"],
            "scheduler": env["SCHEDULER_HEALTH_PORT"],
        }
        self.strikes: dict[str, int] = {}
        self.next_at = 0.0

    def watch(self, children: Sequence[Any], now: float) -> None:
        if now < self.next_at:
            return
        self.next_at = now + PROBE_EVERY_S
        for child in children:
            port = self.ports.get(child.name)
            if port and child.proc is not None and child.proc.poll() is None:
                self._probe(child, port)

    def _probe(self, child: Any, port: str) -> None:
        try:
            code = httpx.get(f"http://{self.host}:{port}/healthz", timeout=1.0).status_code
        except httpx.HTTPError:
            return  # starting, or not serving health: exits are the supervisor's business
        strikes = self.strikes[child.name] = (
            self.strikes.get(child.name, 0) + 1 if code == 503 else 0
        )
        if strikes >= STRIKES:
            self.strikes[child.name] = 0
            print(
                f"{child.name:<9}| unhealthy (a loop is stuck); restarting",
                file=sys.stderr,
                flush=True,
            )
            child.proc.terminate()
