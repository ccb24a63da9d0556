"""Sign-in through an identity provider vs the password, in one run:
`python -m bench.identities [N]`.

Builds the production app in this process (temporary SQLite database or
BENCH_DATABASE_URL, embedded Redis or BENCH_REDIS_URL; production argon2
parameters) with a real OpenID Provider on 127.0.0.1 (idpyoidc's, as the tests
start it: a dev dependency), registers one account with a password and links
its identity at the provider. Then, in alternating rounds so load moves both
alike, N (default 100) sign-ins each way, each in a fresh browser (test
client): the password form (GET /login, POST /login), and the provider's round
trip (POST /login/with/acme, the provider's authorization endpoint, the
callback: its code exchange, the id_token checked against the provider's
JWKS). Prints wall-clock median and p95 per sign-in and their ratio, the
app's share of them, and writes bench/results/identities.json.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.common import services, write_result
from bench.web import PASSWORD, bench_app, csrf_of
from tests.identities.op import Provider

RESULT = Path(__file__).parent / "results" / "identities.json"
BASE = "http://localhost:5000"
SECRET = "bench-client-secret-0123456789"


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def password_sign_in(app: Any, address: str) -> float:
    client = app.test_client()
    t0 = time.perf_counter()
    token = csrf_of(client.get("/login").text)
    r = client.post("/login", data={"email": address, "password": PASSWORD, "csrf_token": token})
    elapsed = time.perf_counter() - t0
    assert r.status_code == 302 and r.headers["Location"] == "/profile", r.status_code
    return elapsed


def provider_sign_in(app: Any) -> tuple[float, float]:
    """(wall seconds, seconds spent at the provider's authorization endpoint)."""
    client = app.test_client()
    t0 = time.perf_counter()
    token = csrf_of(client.get("/login").text)
    start = client.post("/login/with/acme", data={"csrf_token": token})
    t1 = time.perf_counter()
    at_op = httpx.get(start.headers["Location"], follow_redirects=False)
    t2 = time.perf_counter()
    back = urlsplit(at_op.headers["Location"])
    r = client.get(f"{back.path}?{back.query}")
    elapsed = time.perf_counter() - t0
    assert r.status_code == 302 and r.headers["Location"] == "/profile", r.status_code
    return elapsed, t2 - t1


def main(n: int) -> None:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-identities-")))
        db_url, redis_url = services(stack, tmp, reset=True)
        op = Provider()
        op.add_client("webapp", SECRET, f"{BASE}/login/with/acme/callback")
        op.add_user("bench", "bench-idp@example.com")
        op.user = "bench"
        op.start()
        stack.callback(op.stop)
        os.environ.update(
            DATABASE_URL=db_url,
            REDIS_URL=redis_url,
            INSTANCE_PATH=str(tmp / "instance"),
            SECRET_KEY="bench-identities-" + "x" * 32,
            LOG_LEVEL="WARNING",
            BASE_URL=BASE,
            OIDC_ACME_ISSUER=op.issuer,
            OIDC_ACME_CLIENT_ID="webapp",
            OIDC_ACME_CLIENT_SECRET=SECRET,
        )
        app = bench_app()
        address = "bench@example.com"
        client = app.test_client()
        token = csrf_of(client.get("/register").text)
        form = {"email": address, "password": PASSWORD, "confirm": PASSWORD, "csrf_token": token}
        assert client.post("/register", data=form).status_code == 200
        password_sign_in(app, address)
        # Link the identity from the profile (fresh proof: the sign-in just now).
        client = app.test_client()
        token = csrf_of(client.get("/login").text)
        client.post("/login", data={"email": address, "password": PASSWORD, "csrf_token": token})
        token = csrf_of(client.get("/profile").text)
        go = client.post(
            "/profile/connected/connect", data={"provider": "acme", "csrf_token": token}
        )
        back = urlsplit(
            httpx.get(go.headers["Location"], follow_redirects=False).headers["Location"]
        )
        assert client.get(f"{back.path}?{back.query}").headers["Location"].startswith("/profile")
        for _ in range(5):  # warm: templates, discovery, JWKS, pools
            password_sign_in(app, address)
            provider_sign_in(app)
        pw: list[float] = []
        idp: list[float] = []
        at_op: list[float] = []
        for _ in range(n):
            pw.append(password_sign_in(app, address))
            total, op_part = provider_sign_in(app)
            idp.append(total)
            at_op.append(op_part)
        backend = "postgresql" if db_url.startswith("postgres") else "sqlite"
        result = {
            "backend": backend,
            "n": n,
            "password_ms_median": round(statistics.median(pw) * 1000, 2),
            "password_ms_p95": round(_p95(pw) * 1000, 2),
            "provider_ms_median": round(statistics.median(idp) * 1000, 2),
            "provider_ms_p95": round(_p95(idp) * 1000, 2),
            "provider_authorize_ms_median": round(statistics.median(at_op) * 1000, 2),
            "provider_vs_password_median": round(statistics.median(idp) / statistics.median(pw), 3),
        }
        print(f"{n} sign-ins each way ({backend}, production argon2):")
        print(
            f"  password  median {result['password_ms_median']} ms, p95 {result['password_ms_p95']} ms"
        )
        print(
            f"  provider  median {result['provider_ms_median']} ms, p95 {result['provider_ms_p95']} ms"
            f" (its authorization endpoint: {result['provider_authorize_ms_median']} ms)"
        )
        print(f"  provider / password (median): {result['provider_vs_password_median']}x")
        write_result(RESULT, result)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
