"""Behind a reverse proxy (TRUSTED_PROXIES) per-address rate limits
count the real client address; without it X-Forwarded-For is ignored."""

from __future__ import annotations

from typing import Any

from flask import Flask

from tests.support.web import csrf_token
from webapp import create_app


def _register_from(client: Any, forwarded_for: str, i: int) -> int:
    headers = {"X-Forwarded-For": forwarded_for}
    token = csrf_token(client, "/register")
    r = client.post(
        "/register",
        data={"csrf_token": token, "email": f"u{i}@example.com", "password": "x", "confirm": "x"},
        headers=headers,
        environ_base={"REMOTE_ADDR": "10.0.0.1"},  # the proxy
    )
    return int(r.status_code)


def _app(make_config: Any, **overrides: Any) -> Flask:
    application = create_app(make_config(**overrides))
    return application


def test_behind_one_trusted_proxy_each_client_has_its_own_limit(
    app: Flask, make_config: Any
) -> None:
    client = _app(make_config, trusted_proxies=1).test_client()
    for i in range(20):
        assert _register_from(client, "203.0.113.7", i) == 422  # weak password, counted
    assert _register_from(client, "203.0.113.7", 20) == 429
    assert _register_from(client, "198.51.100.9", 21) == 422  # another client: not limited


def test_without_trusted_proxies_the_forwarded_header_is_ignored(
    app: Flask, make_config: Any
) -> None:
    client = _app(make_config).test_client()
    for i in range(20):
        assert _register_from(client, f"203.0.113.{i}", i) == 422
    # A forged header cannot buy a fresh bucket: all of it is the proxy's address.
    assert _register_from(client, "198.51.100.9", 20) == 429
