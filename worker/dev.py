"""`make run`: migrate, then run web + worker + scheduler (+ embedded Redis) in the
foreground with their logs.

A child that exits unexpectedly is started again after a backoff (1 s, 2 s, 4 s
... up to 30 s; back to 1 s once it has run for a minute), so one crash or a
Redis restart never stops the others. Ctrl-C (or SIGTERM) stops everything this
started. Children inherit the environment, so settings such as
`WORKFLOW_MODULES` reach every process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from webapp import create_app, embedded_redis
from webapp.config import Config, ConfigError
from webapp.migrate import upgrade
from worker import dev_health

FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 60.0


def _pump(name: str, stream: IO[bytes]) -> None:
    for raw in iter(stream.readline, b""):
        sys.stdout.write(f"{name:<9}| {raw.decode(errors='replace')}")
        sys.stdout.flush()


def say(name: str, text: str) -> None:
    print(f"{name:<9}| {text}", file=sys.stderr, flush=True)


class Child:
    """One supervised process: started, watched, restarted with backoff."""

    def __init__(self, name: str, start: Callable[[], subprocess.Popen[bytes]]) -> None:
        self.name = name
        self._start = start
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.backoff = FIRST_BACKOFF_S
        self.restart_at: float | None = None

    def start(self) -> None:
        self.proc = self._start()
        self.started_at = time.monotonic()
        self.restart_at = None
        say(self.name, f"started (pid {self.proc.pid})")
        if self.proc.stdout is not None:
            threading.Thread(target=_pump, args=(self.name, self.proc.stdout), daemon=True).start()

    def watch(self, now: float) -> None:
        """Called a few times a second: notice an exit, restart when due."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                say(self.name, "starting again")
                try:
                    self.start()
                except (OSError, RuntimeError) as exc:
                    say(self.name, f"did not start ({exc}); trying again in {self.backoff:.0f} s")
                    self.restart_at = now + self.backoff
                    self.backoff = min(MAX_BACKOFF_S, self.backoff * 2)
            return
        if self.proc is None or self.proc.poll() is None:
            return
        if now - self.started_at >= STABLE_AFTER_S:
            self.backoff = FIRST_BACKOFF_S
        say(self.name, f"exited with {self.proc.returncode}; restarting in {self.backoff:.0f} s")
        self.restart_at = now + self.backoff
        self.backoff = min(MAX_BACKOFF_S, self.backoff * 2)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self, deadline: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def commands(cfg: Config, env: dict[str, str]) -> dict[str, list[str]]:
    py = sys.executable
    web = [py, "-m", "gunicorn", "--workers", env.get("WEB_CONCURRENCY", "2"), "--threads", "4"]
    web += ["--bind", f"{cfg.host}:{cfg.port}", "--access-logfile", "-", "wsgi:app"]
    return {
        "web": web,
        "worker": [py, "-m", "worker.run_worker"],
        "scheduler": [py, "-m", "worker.run_scheduler"],
    }


def _popen(cmd: list[str], env: dict[str, str]) -> Callable[[], subprocess.Popen[bytes]]:
    return lambda: subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def main() -> int:
    try:
        cfg = Config.from_env()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env["INSTANCE_PATH"] = str(cfg.instance_path)
    dev_health.prepare(cfg, env)  # a fresh metrics directory, the health ports
    probe = dev_health.Probe(cfg, env)
    children: list[Child] = []
    if cfg.redis_embedded:
        sock = Path(cfg.redis_url.removeprefix("unix://"))
        try:
            server = embedded_redis.find_server()
        except embedded_redis.NoRedisServer as exc:
            print(exc, file=sys.stderr)
            return 2
        redis_child = Child("redis", lambda: embedded_redis.start(sock, server=server))
        redis_child.start()
        children.append(redis_child)
        print(f"embedded redis   | listening on {sock} ({server.binary}, {server.origin})")
    stopping = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        upgrade(cfg.database_url)
        print(f"database         | migrated ({cfg.database_url.split('://')[0]})")
        try:  # fail here, once, on a bad WORKFLOW_MODULES, not in every child
            create_app(cfg)
        except ConfigError as exc:
            print(f"configuration error: {exc}", file=sys.stderr)
            return 2
        for name, cmd in commands(cfg, env).items():
            child = Child(name, _popen(cmd, env))
            child.start()
            children.append(child)
        print(f"\n  Ready: http://{cfg.host}:{cfg.port}/   (Ctrl-C stops everything)\n", flush=True)
        while not stopping.is_set():
            now = time.monotonic()
            for child in children:
                child.watch(now)
            probe.watch(children, now)
            stopping.wait(0.3)
    finally:
        for child in reversed(children):
            child.terminate()
        deadline = time.monotonic() + 10
        for child in reversed(children):
            child.wait(deadline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
