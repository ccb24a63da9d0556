"""gunicorn for the benches: the Procfile's settings (2 workers x 4 threads,
gthread), started on a free port and ready once it answers; the resident memory
of its workers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
GUNICORN_WORKERS = 2
GUNICORN_THREADS = 4


# -- the servers ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gunicorn(
    target: str, ready_path: str, env: dict[str, str], log: Path, timeout: float = 60
) -> tuple[subprocess.Popen[bytes], str]:
    """`gunicorn --workers 2 --threads 4 target` on a free port, once it answers
    (within `timeout` seconds)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        str(GUNICORN_WORKERS),
        "--threads",
        str(GUNICORN_THREADS),
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        target,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{log.read_text()[-3000:]}")
        try:
            if requests.get(base + ready_path, timeout=1).status_code == 200:
                return proc, base
        except requests.RequestException:
            pass
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"gunicorn did not answer {ready_path}:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def worker_rss_mib(master: int) -> list[float]:
    """Resident memory of each worker (the master's children); Linux /proc only."""
    sizes = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(master) and "VmRSS" in fields:
            sizes.append(round(int(fields["VmRSS"].split()[0]) / 1024, 1))
    return sorted(sizes)
