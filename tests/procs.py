"""Real processes for tests: the app's worker, scheduler and `flask` CLI as
subprocesses, a private redis-server, and polling with a generous deadline."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rq import Worker

from webapp.core import embedded_redis
from webapp.core.config import ROOT


def until(
    pred: Callable[[], Any], timeout: float = 60.0, every: float = 0.2, what: str = ""
) -> Any:
    """Poll `pred` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:.0f} s: {what or pred}")
        time.sleep(every)


def until_listening(workers: list[Proc], redis: Any, timeout: float = 120) -> None:
    """Wait until every one of these RQ worker processes has registered with Redis."""
    pids = {w.popen.pid for w in workers}
    until(
        lambda: pids <= {w.pid for w in Worker.all(connection=redis)},
        timeout=timeout,
        what=f"{len(workers)} workers listen",
    )


def app_env(
    database_url: str, redis_url: str, instance: Path, extra_path: Path | None = None, **more: str
) -> dict[str, str]:
    path = [str(ROOT)] + ([str(extra_path)] if extra_path else [])
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INSTANCE_PATH": str(instance),
        "SECRET_KEY": "process-test-secret-key-0123456789",
        "LOG_LEVEL": "INFO",
        "PYTHONPATH": os.pathsep.join(path),
    }
    env.update(more)
    return env


class Proc:
    """A child process whose output goes to a file (read it in assertions)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._fh = open(log, "ab")  # noqa: SIM115 (closed in stop)
        self.popen = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=self._fh, stderr=subprocess.STDOUT
        )

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._fh.close()


def worker(env: dict[str, str], log: Path) -> Proc:
    return Proc([sys.executable, "-m", "worker.run_worker"], env, log)


def scheduler(env: dict[str, str], log: Path) -> Proc:
    return Proc([sys.executable, "-m", "worker.run_scheduler"], env, log)


def flask(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class PrivateRedis:
    """A redis-server of our own on a unix socket: a test may stop, restart and
    flush it without touching anyone else's Redis."""

    def __init__(self, socket_path: Path) -> None:
        self.socket = socket_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return embedded_redis.url_for(self.socket)

    def start(self) -> None:
        self.proc = embedded_redis.start(self.socket)

    def stop(self) -> None:
        if self.proc is not None:
            embedded_redis.stop(self.proc)
            self.proc = None


@contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    # A short directory: unix socket paths are limited to ~100 characters.
    tmp = Path(tempfile.mkdtemp(prefix="redis-", dir="/tmp"))
    server = PrivateRedis(tmp / "r.sock")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


class TcpProxy:
    """A TCP relay to `upstream` on a fixed local port. `stop()` closes the port
    and cuts every relayed connection (the server looks gone to its clients);
    `start()` opens the same port again. Used to take PostgreSQL away from the
    worker and scheduler without touching the shared server."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(64)
        self._listener = lst
        threading.Thread(target=self._accept, args=(lst,), daemon=True).start()

    def _accept(self, lst: socket.socket) -> None:
        while True:
            try:
                client, _ = lst.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        if self._listener is not None:
            # shutdown() first: close() alone leaves the accept() blocked in the
            # other thread holding the port open, and it goes on relaying.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
