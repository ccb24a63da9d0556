"""Liveness of a background process's own loops (the worker's resume loop
and timer loop, the scheduler's schedule keeper): each loop calls `tick` on
every turn, also while it waits out an outage (it is alive, and a restart
would not help); a loop that has not ticked within `stale_s` is stuck, and
the process's health port answers 503 so a supervisor restarts it.

`serve` starts the tiny HTTP server: `GET /healthz` gives each loop's age,
`GET /metrics` this host's counters (guarded like the web's, see
webapp.metrics.web), for workers on hosts without a web process.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from webapp.core.config import Config
from webapp.metrics import instruments, multiprocess_dir
from webapp.metrics.guard import Guard

log = logging.getLogger(__name__)

_ticks: dict[str, float] = {}  # loop -> time.monotonic() of its last turn


def tick(process: str, loop: str) -> None:
    """One turn of `loop` (in a process of type `process`)."""
    _ticks[loop] = time.monotonic()
    instruments.heartbeat(process, loop)


def verdict(loops: Sequence[str], stale_s: float, since: float) -> tuple[bool, dict[str, Any]]:
    """(healthy, answer): every loop turned within `stale_s` (a loop that never
    did counts from `since`, when the process started serving)."""
    now = time.monotonic()
    ages = {loop: round(now - max(_ticks.get(loop, since), since), 3) for loop in loops}
    healthy = all(age <= stale_s for age in ages.values())
    return healthy, {"status": "ok" if healthy else "stuck", "loops": ages, "stale_after": stale_s}


def _handler(loops: Sequence[str], stale_s: float, since: float, guard: Guard) -> type:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == "/healthz":
                healthy, answer = verdict(loops, stale_s, since)
                self._send(200 if healthy else 503, "application/json", json.dumps(answer) + "\n")
            elif self.path == "/metrics" and guard.admits(
                self.client_address[0], self.headers.get("Authorization")
            ):
                registry = CollectorRegistry()
                MultiProcessCollector(registry, path=str(multiprocess_dir()))
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry).decode())
            else:
                self._send(404, "text/plain", "not found\n")

        def _send(self, code: int, content_type: str, body: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:  # probes every few seconds: no log line each
            pass

    return Handler


def serve(
    host: str, port: int, loops: Sequence[str], stale_s: float, guard: Guard
) -> ThreadingHTTPServer:
    """Answer health on (host, port) from a daemon thread; port 0 picks a free
    one (`server.server_address`). `server.shutdown()` stops it."""
    server = ThreadingHTTPServer((host, port), _handler(loops, stale_s, time.monotonic(), guard))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="health-port", daemon=True).start()
    return server


# The loops each process type watches, and the setting naming its port.
WATCHED = {"worker": ("resume", "timer"), "scheduler": ("schedule",)}


def start(cfg: Config, process: str) -> ThreadingHTTPServer | None:
    """The health port of a worker or scheduler process, if its port is set."""
    port = cfg.worker_health_port if process == "worker" else cfg.scheduler_health_port
    if not port:
        return None
    guard = Guard(cfg.metrics_allow, cfg.metrics_token)
    try:
        return serve(cfg.host, port, WATCHED[process], cfg.health_stale_seconds, guard)
    except OSError as exc:  # the port is taken: run on, without a health port
        log.warning("health port not served", extra={"port": port, "error": str(exc)})
        return None
