"""`make run`: migrate, then run web + worker + scheduler (+ embedded Redis) in the
foreground with their logs.

A child that exits unexpectedly is started again after a backoff (1 s, 2 s, 4 s
... up to 30 s; back to 1 s once it has run for a minute), so one crash or a
Redis restart never stops the others. Children inherit the environment, so
settings such as `WORKFLOW_MODULES` reach every process.

Ctrl-C (or SIGTERM) stops everything this started within `STOP_S`. Each child
runs in a process group of its own (gunicorn's workers, RQ's work horses are in
their parent's), so the terminal's Ctrl-C reaches this supervisor only and the
stop goes in order: SIGTERM to each child (it stops its own: gunicorn its
workers, the worker its job in hand), the embedded Redis last, since the others
still talk to it while they stop; whatever of a group still runs after
`KILL_AFTER_S` is SIGKILLed, the whole group. A second Ctrl-C kills at once. A
child that exits unexpectedly takes its group with it too (a web worker whose
master died must not keep the port from the next master).

"Ready" (with the address to open) is printed once the web process answers
`GET /healthz` on its port, and after the supervisor has asked for the first
pages itself (`WARM_PATHS`), so the first page a person opens is served at once.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import psutil

from webapp import create_app
from webapp.core import embedded_redis
from webapp.core.config import Config, ConfigError
from webapp.core.migrate import upgrade
from worker import dev_health

FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 60.0
STOP_S = 10.0  # Ctrl-C: every process this started is gone within this
KILL_AFTER_S = 7.0  # then what still runs of the app's processes is killed
WEB_GRACE_S = 5  # gunicorn's own graceful timeout for its workers' requests
WARM_PATHS = ("/", "/login")  # asked for before "Ready": the pages opened first
AGENT = "make-run"  # the supervisor's own requests (their access-log lines are not shown)
NOT_SERVING_NOTE_S = 30.0  # still no answer after this long: say so, once


def _pump(name: str, stream: IO[bytes]) -> None:
    own = f'"{AGENT}"'.encode()
    for raw in iter(stream.readline, b""):
        if name == "web" and raw.rstrip().endswith(own):
            continue  # gunicorn's access-log line of the supervisor's own request
        sys.stdout.write(f"{name:<9}| {raw.decode(errors='replace')}")
        sys.stdout.flush()


def say(name: str, text: str) -> None:
    print(f"{name:<9}| {text}", file=sys.stderr, flush=True)


def group_alive(pgid: int) -> bool:
    """A process of the group still runs (its zombies, which hold nothing, do
    not count: an orphan's is only reaped by init, and some inits never do)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == pgid:
                return True
        except (OSError, psutil.Error):
            continue
    return False


class Child:
    """One supervised process (and its process group): started, watched,
    restarted with backoff, stopped."""

    def __init__(
        self, name: str, start: Callable[[], subprocess.Popen[bytes]], stop_last: bool = False
    ) -> None:
        self.name = name
        self._start = start
        self.stop_last = stop_last
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
        self.kill()  # what it left behind goes with it
        if now - self.started_at >= STABLE_AFTER_S:
            self.backoff = FIRST_BACKOFF_S
        say(self.name, f"exited with {self.proc.returncode}; restarting in {self.backoff:.0f} s")
        self.restart_at = now + self.backoff
        self.backoff = min(MAX_BACKOFF_S, self.backoff * 2)

    def terminate(self) -> None:
        """SIGTERM to the child itself: it stops what it started."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to its whole process group."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.poll()

    def running(self) -> bool:
        if self.proc is None:
            return False
        return self.proc.poll() is None or group_alive(self.proc.pid)


def stop(children: list[Child], hurry: threading.Event) -> None:
    """SIGTERM, wait, SIGKILL what is left: the app's processes, then those
    they need while they stop (the embedded Redis). Done within STOP_S."""
    started = time.monotonic()
    first = [c for c in children if not c.stop_last]
    last = [c for c in children if c.stop_last]
    for wave, kill_at in ((first, started + KILL_AFTER_S), (last, started + STOP_S - 1)):
        for child in wave:
            child.terminate()
        while any(c.running() for c in wave) and time.monotonic() < kill_at:
            if hurry.wait(0.05):  # a second Ctrl-C
                break
        for child in wave:
            if child.running():
                say(child.name, "still running; killed")
                child.kill()
        while any(c.running() for c in wave) and time.monotonic() < started + STOP_S:
            time.sleep(0.05)


def web_address(cfg: Config) -> tuple[str, int]:
    """Where to reach the web process from this machine (HOST may be a wildcard)."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(cfg.host, cfg.host)
    return host, cfg.port


def status_of(address: tuple[str, int], path: str, timeout: float = 5.0) -> int:
    """The status of one GET (0: no answer). http.client, not a client that
    honours proxy settings: this is a request to ourselves."""
    conn = http.client.HTTPConnection(*address, timeout=timeout)
    try:
        conn.request("GET", path, headers={"User-Agent": AGENT})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def _out(text: str) -> None:
    print(text, flush=True)


def announce_ready(
    address: tuple[str, int],
    base_url: str,
    children: list[Child],
    stopping: threading.Event,
    every: float = 0.2,
    out: Callable[[str], None] = _out,
) -> bool:
    """Print "Ready" once `GET /healthz` answers 200 on `address` and the
    `WARM_PATHS` were asked for, watching the children meanwhile (one that
    exits is started again). False when stopped first."""
    started = time.monotonic()
    noted = False
    while not stopping.is_set():
        now = time.monotonic()
        for child in children:
            child.watch(now)
        if status_of(address, "/healthz") == 200:
            for path in WARM_PATHS:
                status_of(address, path)
            # BASE_URL, not HOST:PORT: the address to open (passkeys work only there)
            out(f"\n  Ready: {base_url}/   (Ctrl-C stops everything)\n")
            return True
        if not noted and now - started >= NOT_SERVING_NOTE_S:
            host, port = address
            say("web", f"no answer on http://{host}:{port}/healthz yet; still waiting")
            noted = True
        stopping.wait(every)
    return False


def commands(cfg: Config, env: dict[str, str]) -> dict[str, list[str]]:
    py = sys.executable
    web = [py, "-m", "gunicorn", "--workers", env.get("WEB_CONCURRENCY", "2"), "--threads", "4"]
    web += ["--bind", f"{cfg.host}:{cfg.port}", "--graceful-timeout", str(WEB_GRACE_S)]
    web += ["--access-logfile", "-", "wsgi:app"]
    return {
        "web": web,
        "worker": [py, "-m", "worker.run_worker"],
        "scheduler": [py, "-m", "worker.run_scheduler"],
    }


def _popen(cmd: list[str], env: dict[str, str]) -> Callable[[], subprocess.Popen[bytes]]:
    return lambda: subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )


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
    stopping, hurry = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        (hurry if stopping.is_set() else stopping).set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        if cfg.redis_embedded:
            sock = Path(cfg.redis_url.removeprefix("unix://"))
            try:
                server = embedded_redis.find_server()
            except embedded_redis.NoRedisServer as exc:
                print(exc, file=sys.stderr)
                return 2
            redis_child = Child(
                "redis",
                lambda: embedded_redis.start(sock, server=server, new_session=True),
                stop_last=True,
            )
            redis_child.start()
            children.append(redis_child)
            print(embedded_redis.listening_line(sock, server))
        upgrade(cfg.database_url)
        print(f"{'database':<9}| migrated ({cfg.database_url.split('://')[0]})")
        try:  # fail here, once, on a bad WORKFLOW_MODULES, not in every child
            create_app(cfg)
        except ConfigError as exc:
            print(f"configuration error: {exc}", file=sys.stderr)
            return 2
        for name, cmd in commands(cfg, env).items():
            if stopping.is_set():
                break
            child = Child(name, _popen(cmd, env))
            child.start()
            children.append(child)
        announce_ready(web_address(cfg), cfg.base_url, children, stopping)
        while not stopping.is_set():
            now = time.monotonic()
            for child in children:
                child.watch(now)
            probe.watch(children, now)
            stopping.wait(0.3)
    finally:
        stop(children, hurry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
