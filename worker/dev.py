"""`make run`: migrate, then run web + worker + scheduler (+ embedded Redis) in the
foreground with their logs; Ctrl-C stops everything this started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from webapp import embedded_redis
from webapp.config import Config, ConfigError
from webapp.migrate import upgrade


def _pump(name: str, stream: IO[bytes]) -> None:
    for raw in iter(stream.readline, b""):
        sys.stdout.write(f"{name:<9}| {raw.decode(errors='replace')}")
        sys.stdout.flush()


def main() -> int:
    try:
        cfg = Config.from_env()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    redis_proc = None
    env = dict(os.environ)
    if cfg.redis_embedded:
        try:
            redis_proc, line = embedded_redis.launch(Path(cfg.redis_url.removeprefix("unix://")))
        except embedded_redis.NoRedisServer as exc:
            print(exc, file=sys.stderr)
            return 2
        print(line)
    env["INSTANCE_PATH"] = str(cfg.instance_path)
    upgrade(cfg.database_url)
    print(f"database         | migrated ({cfg.database_url.split('://')[0]})")
    py = sys.executable
    commands = {
        "web": [
            py,
            "-m",
            "gunicorn",
            "--workers",
            env.get("WEB_CONCURRENCY", "2"),
            "--threads",
            "4",
            "--bind",
            f"{cfg.host}:{cfg.port}",
            "--access-logfile",
            "-",
            "wsgi:app",
        ],
        "worker": [py, "-m", "worker.run_worker"],
        "scheduler": [py, "-m", "worker.run_scheduler"],
    }
    stopping = threading.Event()

    def stop(*_: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        for name, cmd in commands.items():
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert p.stdout is not None
            threading.Thread(target=_pump, args=(name, p.stdout), daemon=True).start()
            procs.append((name, p))
        print(f"\n  Ready: http://{cfg.host}:{cfg.port}/   (Ctrl-C stops everything)\n", flush=True)
        while not stopping.is_set():
            for name, p in procs:
                if p.poll() is not None:
                    print(f"{name} exited with {p.returncode}; stopping", file=sys.stderr)
                    stopping.set()
            time.sleep(0.3)
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _, p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if redis_proc is not None:
            embedded_redis.stop(redis_proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
