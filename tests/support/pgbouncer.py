"""A real PgBouncer in transaction pooling mode in front of the test PostgreSQL
(TEST_PGBOUNCER=1, with TEST_DATABASE_URL): `.ci/run` runs part of the suite
through it, the way a deployment with many processes would reach its database
(docs/operations.md, "Scaling out"). Debian's `pgbouncer` package provides the
binary; the tests start it on a free port with a configuration of their own
and stop it at the end of the session."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

BINARY = os.environ.get("PGBOUNCER_BIN") or shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


def wanted() -> bool:
    return os.environ.get("TEST_PGBOUNCER", "") not in ("", "0")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The pooling settings the tests run with by default: those docs/operations.md
# recommends ("Many processes on one PostgreSQL: PgBouncer").
POOLING = {
    "pool_mode": "transaction",
    "max_client_conn": "1000",
    "default_pool_size": "40",
    "server_reset_query": "",
    "ignore_startup_parameters": "extra_float_digits,options",
}


def _config(
    folder: Path,
    port: int,
    server_host: str,
    server_port: int,
    user: str,
    pooling: Mapping[str, str],
) -> Path:
    (folder / "users.txt").write_text(f'"{user}" ""\n')
    ini = folder / "pgbouncer.ini"
    local = {  # where it listens and who may connect: this test machine's
        "listen_addr": "127.0.0.1",
        "listen_port": str(port),
        "unix_socket_dir": str(folder),
        "auth_type": "trust",
        "auth_file": str(folder / "users.txt"),
        "logfile": str(folder / "pgbouncer.log"),
        "pidfile": str(folder / "pgbouncer.pid"),
    }
    lines = ["[databases]", f"* = host={server_host} port={server_port}", "[pgbouncer]"]
    lines += [f"{k} = {v}".rstrip() for k, v in {**pooling, **local}.items()]
    ini.write_text("\n".join(lines) + "\n")
    return ini


@contextmanager
def in_front_of(url: str, pooling: Mapping[str, str] = POOLING) -> Iterator[str]:
    """`url` (a PostgreSQL URL) reached through a PgBouncer started for the
    block with these `[pgbouncer]` pooling settings (transaction pooling by
    default); stopped at the end."""
    if not Path(BINARY).exists():
        raise RuntimeError(
            f"TEST_PGBOUNCER is set but {BINARY} does not exist: apt-get install pgbouncer"
        )
    base = make_url(url)
    user = base.username or "postgres"
    folder = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    port = _free_port()
    ini = _config(folder, port, base.host or "127.0.0.1", base.port or 5432, user, pooling)
    args = [BINARY, str(ini)]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root: it drops to postgres
        owner = pwd.getpwnam("postgres")
        for path in (folder, *folder.iterdir()):
            os.chown(path, owner.pw_uid, owner.pw_gid)
        args = [BINARY, "-u", "postgres", str(ini)]
    with open(folder / "stderr.log", "wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                log = (
                    (folder / "pgbouncer.log").read_text()
                    if (folder / "pgbouncer.log").exists()
                    else ""
                )
                raise RuntimeError(f"pgbouncer exited at start: {err}{log}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("pgbouncer did not listen within 20 s") from None
                time.sleep(0.05)
        yield base.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
