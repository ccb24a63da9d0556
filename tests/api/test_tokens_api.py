"""API tokens: only a live bearer token with the operation's scope gets in;
a revoked one is refused on its next request by every process (a real
gunicorn too); a signed-in browser's session cookie opens nothing; each token
is rate-limited in the shared storage, with Retry-After."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests import procs
from tests.support.api import ALL_SCOPES, bearer, make_token, problem
from webapp import create_app
from webapp.api import tokens
from webapp.api.endpoint import BASE, OPERATIONS, Operation
from webapp.api.tables import api_tokens
from webapp.core import db

SAMPLE_PATH = {"run_id": "00000000-0000-4000-8000-000000000000", "name": "nap"}


def url(op: Operation) -> str:
    return BASE + re.sub(r"{(\w+)}", lambda m: SAMPLE_PATH[m.group(1)], op.path)


def call(client: FlaskClient, op: Operation, headers: dict[str, str]) -> Any:
    return client.open(url(op), method=op.method, headers=headers)


def test_every_operation_wants_a_live_token(client: FlaskClient, token: Any) -> None:
    secret = token()
    assert [op for op in OPERATIONS if op.public] == []
    for op in OPERATIONS:
        for headers in (
            {},
            {"Authorization": "Basic abc"},
            bearer("wfk_unknown"),
            bearer(secret[:-1]),
        ):
            p = problem(call(client, op, headers), 401)
            assert p["type"].endswith("/unauthorized"), (op.path, headers)
            assert call(client, op, headers).headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("scope", ALL_SCOPES)
def test_each_operation_refuses_a_token_without_its_scope(
    client: FlaskClient, token: Any, scope: str
) -> None:
    """A token with every scope but one: 403 where that one is needed (before
    anything is looked up, so not even whether a run exists shows)."""
    secret = token(*(s for s in ALL_SCOPES if s != scope))
    needing = [op for op in OPERATIONS if op.scope == scope]
    assert needing, f"no operation needs {scope}"
    for op in needing:
        p = problem(call(client, op, bearer(secret)), 403)
        assert scope in p["detail"]
    for op in OPERATIONS:
        if op.scope != scope:
            assert call(client, op, bearer(secret)).status_code != 403, op.path


def test_a_session_cookie_opens_nothing_and_no_csrf_token_is_asked(
    admin: FlaskClient, token: Any
) -> None:
    """A signed-in admin's browser (session cookie) gets 401 from the API: a
    page elsewhere cannot make it publish or cancel. With a token, no CSRF
    token is needed (the test app checks CSRF on every other form)."""
    order = {"type": "order.placed", "aggregateType": "order", "aggregateId": "1"}
    problem(admin.post("/api/v1/events", json=order), 401)
    problem(admin.get("/api/v1/runs"), 401)
    assert admin.post("/admin/runs/x/cancel").status_code == 400  # the console still wants CSRF
    resp = admin.post("/api/v1/events", json=order, headers=bearer(token("events:write")))
    assert resp.status_code == 201 and "Set-Cookie" not in resp.headers


def test_create_list_and_revoke_with_the_cli(runner: Any, client: FlaskClient) -> None:
    made = runner.invoke(
        args=[
            "api-tokens",
            "create",
            "--name",
            "storefront",
            "--scope",
            "events:write",
            "--scope",
            "runs:read",
        ]
    )
    assert made.exit_code == 0, made.output
    secret = made.output.strip().splitlines()[-1]
    token_id = re.search(r"created API token (\S+)", made.output).group(1)  # type: ignore[union-attr]
    assert secret.startswith("wfk_") and len(secret) > 40
    with db.reading() as conn:
        stored = tokens.get(conn, token_id)
        kept = repr(conn.execute(select(api_tokens)).all())
    assert stored is not None and secret not in kept and tokens.secret_hash(secret) in kept
    listed = runner.invoke(args=["api-tokens", "list"]).output
    assert "storefront" in listed and "never" in listed and secret not in listed
    assert client.get("/api/v1/token", headers=bearer(secret)).get_json() == {
        "id": token_id,
        "name": "storefront",
        "tenant": "default",
        "scopes": ["events:write", "runs:read"],
        "createdAt": client.get("/api/v1/token", headers=bearer(secret)).get_json()["createdAt"],
    }
    listed = runner.invoke(args=["api-tokens", "list"]).output
    assert "never" not in listed and "active" in listed  # its last use is shown
    assert runner.invoke(args=["api-tokens", "revoke", token_id]).exit_code == 0
    problem(client.get("/api/v1/token", headers=bearer(secret)), 401)
    assert "revoked" in runner.invoke(args=["api-tokens", "list"]).output
    again = runner.invoke(args=["api-tokens", "revoke", token_id])
    assert again.exit_code == 1 and "already revoked" in again.output
    for bad in (["--scope", "runs:delete"], ["--scope", "runs:read", "--tenant", "nope"], []):
        res = runner.invoke(args=["api-tokens", "create", "--name", "x", *bad])
        assert res.exit_code != 0


def test_the_rate_limit_is_per_token_across_processes_with_retry_after(
    make_config: Any, redis_url: str, app: Flask
) -> None:
    """Two app processes share the limit's storage (Redis): the token's
    fourth request in a minute is refused, in either; another token is not."""
    config = make_config(api_rate_limit="3 per minute", ratelimit_storage=_limits_uri(redis_url))
    one, two = create_app(config), create_app(config)
    _, secret = make_token("runs:read")
    _, other = make_token("runs:read", name="other")
    with one.app_context():
        a = one.test_client()
        assert a.get("/api/v1/runs", headers=bearer(secret)).status_code == 200
        assert a.get("/api/v1/runs", headers=bearer(secret)).status_code == 200
    with two.app_context():
        b = two.test_client()
        assert b.get("/api/v1/runs", headers=bearer(secret)).status_code == 200
        limited = b.get("/api/v1/runs", headers=bearer(secret))
        p = problem(limited, 429)
        assert 1 <= int(limited.headers["Retry-After"]) <= 60 and "3 per minute" in p["detail"]
        assert b.get("/api/v1/runs", headers=bearer(other)).status_code == 200


def _limits_uri(redis_url: str) -> str:
    return (
        "redis+unix://" + redis_url[len("unix://") :]
        if redis_url.startswith("unix://")
        else redis_url
    )


@pytest.fixture
def gunicorn(app: Flask, database_url: str, redis_url: str, tmp_path: Path) -> Any:
    """The app served by a real gunicorn (its own process) on this test's database."""
    port = _free_port()
    env = procs.app_env(database_url, redis_url, tmp_path / "instance")
    log = tmp_path / "gunicorn.log"
    proc = procs.Proc(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--workers",
            "1",
            "--bind",
            f"127.0.0.1:{port}",
            "wsgi:app",
        ],
        env,
        log,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.alive(), proc.output()
        try:
            return requests.get(base + "/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        procs.until(up, timeout=60, what="gunicorn answers")
        yield base, env
    finally:
        proc.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_revoked_token_is_refused_at_once_by_another_process(gunicorn: Any) -> None:
    """Revoked with `flask api-tokens revoke` (one process), refused on its
    very next request by a gunicorn worker (another) that had just served it."""
    base, env = gunicorn
    token_id, secret = make_token("runs:read")
    with requests.Session() as s:  # keep-alive: the same worker, the same connection
        assert s.get(base + "/api/v1/token", headers=bearer(secret), timeout=10).status_code == 200
        done = procs.flask(env, "api-tokens", "revoke", token_id)
        assert done.returncode == 0, done.stderr
        refused = s.get(base + "/api/v1/token", headers=bearer(secret), timeout=10)
    assert (
        refused.status_code == 401 and refused.headers["Content-Type"] == "application/problem+json"
    )
    assert refused.json()["type"].endswith("/unauthorized")
