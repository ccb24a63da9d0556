"""Is any process of the product still at work? A restore must not replace
the database under a process that would go on writing to the old one.

Asked three ways, since no one of them sees everything:

- Redis: every worker keeps a liveness key (`webapp:wf:alive:<name>`, gone
  2 s after the worker dies) and the scheduler keeps rq-scheduler's key
  (`rq:scheduler`, gone 11 s after it dies without saying so).
- SQLite: any other process on this machine with the database file open
  (web processes keep pooled connections; so does a `flask` shell).
- PostgreSQL: any other session connected to the database.

An unreachable Redis is said, not taken for "nothing runs": the database's
answer still counts.
"""

from __future__ import annotations

import os
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError

WORKER_KEYS = "webapp:wf:alive:*"
SCHEDULER_KEY = "rq:scheduler"


def in_redis(redis: Redis) -> tuple[list[str], str | None]:
    """(what runs, a note when Redis could not be asked)."""
    try:
        workers = sorted(k.decode() for k in redis.scan_iter(WORKER_KEYS, count=500))
        scheduler = redis.hgetall(SCHEDULER_KEY)
    except (RedisError, OSError) as exc:
        return (
            [],
            f"Redis did not answer ({type(exc).__name__}): could not ask it which workers run",
        )
    found = [f"worker {k.removeprefix(WORKER_KEYS[:-1])}" for k in workers]
    if scheduler and b"death" not in scheduler:
        found.append("the scheduler")
    return found, None


def holding_file(path: Path) -> list[str]:
    """Other processes (this machine, /proc) with `path` or its `-wal` open."""
    wanted = {str(path), f"{path}-wal"}
    me = os.getpid()
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            targets = {os.readlink(fd) for fd in (entry / "fd").iterdir()}
        except OSError:  # gone, or not ours to look at
            continue
        if targets & wanted:
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                cmd = "?"
            found.append(f"process {entry.name} ({cmd[:80]})")
    return sorted(found)
