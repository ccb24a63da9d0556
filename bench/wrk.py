"""Drive one URL with wrk and read its figures.

wrk (a C load generator) instead of Python client threads: the client must cost
far less than the server, or the figures measure the client. Each run gets a
small Lua script that sets the method, body and headers and, when wrk is done,
prints one JSON line with the request count, the status/socket errors and the
latency percentiles (wrk's own summary is for humans).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

THREADS = int(os.environ.get("BENCH_WRK_THREADS", "2"))
CONNECTIONS = int(os.environ.get("BENCH_WRK_CONNECTIONS", "8"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
WARMUP = float(os.environ.get("BENCH_WARMUP", "1"))

MISSING = (
    "bench.web needs wrk, the HTTP load generator, and it is not on PATH.\n"
    "  Debian/Ubuntu: sudo apt-get install wrk    macOS: brew install wrk\n"
    "  or set BENCH_WRK=/path/to/wrk"
)

_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '\\n@@wrk {"requests":%d,"duration_us":%d,"status_errors":%d,"socket_errors":%d,'
    .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
"""


class WrkMissing(RuntimeError):
    pass


def executable() -> str:
    path = os.environ.get("BENCH_WRK") or shutil.which("wrk")
    if not path or not os.access(path, os.X_OK):
        raise WrkMissing(MISSING)
    return path


@dataclass(frozen=True)
class Request:
    url: str
    method: str = "GET"
    headers: Mapping[str, str] | None = None
    body: str = ""
    lua: str = ""  # more Lua, e.g. a `request` function that makes each body anew


@dataclass(frozen=True)
class Figures:
    requests: int
    seconds: float
    status_errors: int  # answers with status >= 400
    socket_errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def _lua_string(value: str) -> str:
    level = "=" * 4
    if f"]{level}]" in value:
        raise ValueError("value cannot be quoted for Lua")
    return f"[{level}[{value}]{level}]"


def script(req: Request) -> str:
    lines = [f"wrk.method = {_lua_string(req.method)}"]
    if req.body:
        lines.append(f"wrk.body = {_lua_string(req.body)}")
    for name, value in (req.headers or {}).items():
        lines.append(f"wrk.headers[ {_lua_string(name)} ] = {_lua_string(value)}")
    return "\n".join(lines) + "\n" + req.lua + "\n" + _DONE


def run(
    req: Request, seconds: float = SECONDS, threads: int = THREADS, connections: int = CONNECTIONS
) -> Figures:
    """One wrk run of `seconds` against `req` (keep-alive connections)."""
    wrk = executable()
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script(req))
        lua = Path(fh.name)
    try:
        out = subprocess.run(
            [
                wrk,
                f"-t{threads}",
                f"-c{connections}",
                f"-d{seconds:g}s",
                "--timeout",
                "10s",
                "-s",
                str(lua),
                req.url,
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=False,
        )
    finally:
        lua.unlink()
    line = next((x for x in out.stdout.splitlines() if x.startswith("@@wrk ")), None)
    if out.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stdout[-800:]}{out.stderr[-800:]}")
    d = json.loads(line[len("@@wrk ") :])
    return Figures(
        requests=d["requests"],
        seconds=d["duration_us"] / 1e6,
        status_errors=d["status_errors"],
        socket_errors=d["socket_errors"],
        p50_ms=d["p50_us"] / 1000,
        p90_ms=d["p90_us"] / 1000,
        p99_ms=d["p99_us"] / 1000,
        max_ms=d["max_us"] / 1000,
    )


def settings() -> dict[str, float | int]:
    return {
        "wrk_threads": THREADS,
        "connections": CONNECTIONS,
        "seconds_per_route": SECONDS,
        "warmup_s": WARMUP,
    }
