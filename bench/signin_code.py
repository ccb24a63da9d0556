"""Does asking for a sign-in code take as long for an unknown address as for
a known one? `python -m bench.signin_code [N]`.

Builds the production app in this process (temporary SQLite database or
BENCH_DATABASE_URL, embedded Redis or BENCH_REDIS_URL; production argon2
parameters; rate limits that do not throttle), registers one account, then
times, interleaved in a random order so load hits both alike:

- `POST /login/email-code` for the known address and for an unknown one
  (N of each, default 400): the known one records the mail in the outbox and
  asks the worker to send it; the unknown one writes its row and composes
  the mail, and records nothing;
- `POST /login` with a wrong password for the known address and for an
  unknown one (N/8 of each): the password form's bounds, its argon2 check
  made on both paths.

It prints, per form, the median and p90 of each path, the gap between the
medians (known - unknown) with the spread of that gap over 8 blocks of the
run, and the gap relative to the form's median; and writes them to
bench/results/signin_code.json. The code form keeps its answer's timing
"within the password form's bounds" when its gap is no larger than the
password form's own gap and block-to-block spread.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.common import services, write_result
from bench.web import PASSWORD, bench_app

RESULT = Path(__file__).parent / "results" / "signin_code.json"
BLOCKS = 8
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def _token(client: Any, path: str) -> str:
    return CSRF.search(client.get(path).text).group(1)  # type: ignore[union-attr]


CPU: dict[str, float] = {}  # CPU ms of the latest request (what load moves least)


def _timed(send: Callable[[], int], expect: int) -> float:
    c0, t0 = time.process_time(), time.perf_counter()
    status = send()
    elapsed = (time.perf_counter() - t0) * 1000
    CPU["last"] = (time.process_time() - c0) * 1000
    if status != expect:
        raise RuntimeError(f"expected {expect}, got {status}")
    return elapsed


def _interleaved(
    n: int, known: Callable[[], float], unknown: Callable[[], float]
) -> dict[str, list[float]]:
    order = ["known"] * n + ["unknown"] * n
    random.Random(7).shuffle(order)
    out: dict[str, list[float]] = {"known": [], "unknown": [], "known_cpu": [], "unknown_cpu": []}
    for which in order:
        out[which].append(known() if which == "known" else unknown())
        out[f"{which}_cpu"].append(CPU["last"])
    return out


def _summary(times: dict[str, list[float]]) -> dict[str, float]:
    k, u = times["known"], times["unknown"]
    size = len(k) // BLOCKS
    gaps = [
        statistics.median(k[i * size : (i + 1) * size])
        - statistics.median(u[i * size : (i + 1) * size])
        for i in range(BLOCKS)
    ]
    median = statistics.median(k + u)
    gap = statistics.median(k) - statistics.median(u)
    return {
        "known_median_ms": round(statistics.median(k), 3),
        "unknown_median_ms": round(statistics.median(u), 3),
        "known_p90_ms": round(statistics.quantiles(k, n=10)[-1], 3),
        "unknown_p90_ms": round(statistics.quantiles(u, n=10)[-1], 3),
        "gap_ms": round(gap, 3),
        "gap_block_min_ms": round(min(gaps), 3),
        "gap_block_max_ms": round(max(gaps), 3),
        "gap_relative": round(gap / median, 4),
        "known_cpu_median_ms": round(statistics.median(times["known_cpu"]), 3),
        "unknown_cpu_median_ms": round(statistics.median(times["unknown_cpu"]), 3),
    }


def main(n: int) -> dict[str, Any]:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="signin-code-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        os.environ.update(
            DATABASE_URL=db_url,
            REDIS_URL=redis_url,
            INSTANCE_PATH=str(tmp / "instance"),
            SECRET_KEY="signin-code-" + "x" * 32,
            LOG_LEVEL="WARNING",
        )
        app = bench_app()
        if True:  # no app context of our own: each request gets a fresh one (and `g`)
            known = "known@example.com"
            client = app.test_client()
            form = {"email": known, "password": PASSWORD, "confirm": PASSWORD}
            client.post("/register", data={**form, "csrf_token": _token(client, "/register")})

            def code_asker(address: str) -> Callable[[], float]:
                c = app.test_client()
                token = _token(c, "/login/email-code")
                data = {"email": address, "csrf_token": token}
                return lambda: _timed(
                    lambda: c.post("/login/email-code", data=data).status_code, 200
                )

            def password_try(address: str) -> Callable[[], float]:
                c = app.test_client()
                data = {
                    "email": address,
                    "password": "not the password",
                    "csrf_token": _token(c, "/login"),
                }
                return lambda: _timed(lambda: c.post("/login", data=data).status_code, 422)

            ask_known, ask_unknown = code_asker(known), code_asker("unknown@example.com")
            try_known, try_unknown = password_try(known), password_try("unknown@example.com")
            for _ in range(30):  # warm caches (templates, catalogs, pool, argon2 dummy hash)
                ask_known(), ask_unknown()
            try_known(), try_unknown()
            code = _summary(_interleaved(n, ask_known, ask_unknown))
            password = _summary(_interleaved(max(n // 8, BLOCKS * 4), try_known, try_unknown))
    backend = "postgresql" if db_url.startswith("postgres") else "sqlite"
    result = {"backend": backend, "n": n, "code_request": code, "password_form": password}
    for name, s in (("POST /login/email-code", code), ("POST /login (wrong password)", password)):
        print(
            f"{name}: known {s['known_median_ms']:.2f} ms (p90 {s['known_p90_ms']:.2f}), "
            f"unknown {s['unknown_median_ms']:.2f} ms (p90 {s['unknown_p90_ms']:.2f}); "
            f"gap {s['gap_ms']:+.3f} ms ({s['gap_relative']:+.1%}), "
            f"per block {s['gap_block_min_ms']:+.3f} .. {s['gap_block_max_ms']:+.3f} ms; "
            f"CPU known {s['known_cpu_median_ms']:.2f} ms, unknown {s['unknown_cpu_median_ms']:.2f} ms"
        )
    write_result(RESULT, result)
    return result


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
