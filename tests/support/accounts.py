"""Accounts as the tests use them: registering and signing in through the real
pages, the account's row, the mails it was sent; the `user` (signed in with
`client`), `other_client`, `admin` and `plain` fixtures. `CHEAP` is the config
the account-heavy test packages run with (their conftest's `config_defaults`)."""

from __future__ import annotations

import email
import email.policy
import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.support.web import post
from webapp.accounts import users
from webapp.admin import grants
from webapp.core import actors, db

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "tangerine submarine umbrella"
ADMIN = "root@example.com"
PLAIN = "pat@example.com"

# Cheap argon2 (one test asks for the production parameters) and in-memory rate limits.
CHEAP: dict[str, Any] = {
    "argon2_time_cost": 1,
    "argon2_memory_cost": 1024,
    "argon2_parallelism": 1,
    "ratelimit_storage": "memory://",
}


def register(client: FlaskClient, address: str, password: str = PASSWORD) -> Any:
    return post(client, "/register", email=address, password=password, confirm=password)


def login(client: FlaskClient, address: str, password: str = PASSWORD, **extra: str) -> Any:
    return post(client, "/login", email=address, password=password, **extra)


def user_row(address: str) -> Any:
    with db.reading() as conn:
        return users.find_by_email(conn, address)


def make_admin(address: str) -> None:
    grants.set_admin(address, True, actors.operator())


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


@pytest.fixture
def admin(app: Flask, client: FlaskClient) -> FlaskClient:
    """`client`, signed in as an admin."""
    assert register(client, ADMIN).status_code == 200
    make_admin(ADMIN)
    assert login(client, ADMIN).status_code == 302
    return client


@pytest.fixture
def plain(app: Flask) -> FlaskClient:
    """Another client, signed in as an ordinary account."""
    c = app.test_client()
    assert register(c, PLAIN).status_code == 200
    assert login(c, PLAIN).status_code == 302
    return c
