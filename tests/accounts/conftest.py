"""Fixtures for the accounts tests: cheap argon2 (one test uses the production
parameters), in-memory rate limits, and helpers that drive the real pages."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "tangerine submarine umbrella"


@pytest.fixture
def make_config(make_config: Callable[..., Any]) -> Callable[..., Any]:
    def make(**overrides: Any) -> Any:
        overrides.setdefault("argon2_time_cost", 1)
        overrides.setdefault("argon2_memory_cost", 1024)
        overrides.setdefault("argon2_parallelism", 1)
        overrides.setdefault("ratelimit_storage", "memory://")
        return make_config(**overrides)

    return make


def csrf_token(client: FlaskClient, path: str = "/login") -> str:
    html = client.get(path).get_data(as_text=True)
    match = re.search(r'<meta name="csrf-token" content="([^"]+)"', html)
    assert match, "page has no csrf-token meta tag"
    return match.group(1)


def post(client: FlaskClient, path: str, htmx: bool = False, **data: str) -> Any:
    data.setdefault(
        "csrf_token", csrf_token(client, "/profile" if path.startswith("/profile") else "/login")
    )
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(path, data=data, headers=headers)


def register(client: FlaskClient, address: str, password: str = PASSWORD) -> Any:
    return post(client, "/register", email=address, password=password, confirm=password)


def login(client: FlaskClient, address: str, password: str = PASSWORD, **extra: str) -> Any:
    return post(client, "/login", email=address, password=password, **extra)


def user_row(address: str) -> Any:
    from webapp import db
    from webapp.accounts import users

    with db.reading() as conn:
        return users.find_by_email(conn, address)


def mails(app: Flask) -> list[email.message.EmailMessage]:
    folder = Path(app.config["APP_CONFIG"].instance_path) / "mail"
    out = []
    for path in sorted(folder.glob("*.eml")) if folder.exists() else []:  # named by send time
        out.append(email.message_from_bytes(path.read_bytes(), policy=email.policy.default))
    return out  # type: ignore[return-value]


def body(msg: Any) -> str:
    return str(msg.get_body(preferencelist=("plain",)).get_content())


def link_in(msg: Any, prefix: str) -> str:
    match = re.search(rf"http://localhost({re.escape(prefix)}\S+)", body(msg))
    assert match, f"no {prefix} link in mail"
    return match.group(1)


@pytest.fixture
def user(app: Flask, client: FlaskClient) -> Any:
    """A registered (unverified) user, signed in with `client`."""
    assert register(client, "ada@example.com").status_code == 200
    assert login(client, "ada@example.com").status_code == 302
    return user_row("ada@example.com")


@pytest.fixture
def other_client(app: Flask) -> FlaskClient:
    return app.test_client()
