"""Where a request's time goes: `python -m bench.profile_web [PATH] [N]`.

Builds the production app in this process (temporary SQLite database or
BENCH_DATABASE_URL, embedded Redis or BENCH_REDIS_URL), signs a user in with
Flask's test client, then serves N (default 500) requests of PATH (default
/profile) and prints the CPU milliseconds per request (N requests), then
serves N more under pyinstrument and prints its call tree (when pyinstrument
is installed: `pip install pyinstrument`, not a dependency of the app).
BENCH_HTMX=1 adds `HX-Request`.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench.common import services
from bench.web import PASSWORD, bench_app


def main(path: str, n: int) -> None:
    try:
        from pyinstrument import Profiler
    except ImportError:
        Profiler = None  # the CPU figure only
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="profile-web-")))
        db_url, redis_url = services(stack, tmp, reset=False)
        os.environ.update(
            DATABASE_URL=db_url,
            REDIS_URL=redis_url,
            INSTANCE_PATH=str(tmp / "instance"),
            SECRET_KEY="profile-web-" + "x" * 32,
            LOG_LEVEL="WARNING",
        )
        app = bench_app()
        client = app.test_client()
        address = f"profile-{time.time_ns()}@example.com"
        html = client.get("/register").text
        token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)  # type: ignore[union-attr]
        form = {"email": address, "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token}
        client.post("/register", data=form)
        client = app.test_client()
        html = client.get("/login").text
        token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)  # type: ignore[union-attr]
        client.post("/login", data={"email": address, "password": PASSWORD, "csrf_token": token})
        headers = {"HX-Request": "true"} if os.environ.get("BENCH_HTMX") else {}
        for _ in range(50):  # warm caches (templates, catalogs, pool)
            status = client.get(path, headers=headers).status_code
        print(f"{path}: {status}")
        t0 = time.process_time()
        for _ in range(n):
            client.get(path, headers=headers)
        plain_ms = (time.process_time() - t0) * 1000 / n
        if Profiler is None:
            print(f"{n} requests of {path}: {plain_ms:.2f} ms CPU per request")
            print("(no call tree: pip install pyinstrument)")
            return
        profiler = Profiler(interval=0.0002)
        t0 = time.process_time()
        profiler.start()
        for _ in range(n):
            client.get(path, headers=headers)
        profiler.stop()
        cpu_ms = (time.process_time() - t0) * 1000 / n
        print(profiler.output_text(unicode=True, color=False, show_all=False))
        print(f"{n} requests of {path}: {plain_ms:.2f} ms CPU per request ({cpu_ms:.2f} profiled)")


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "/profile",
        int(sys.argv[2]) if len(sys.argv) > 2 else 500,
    )
