"""Fixtures for the console tests: an admin signed in with `client`, a plain
user signed in with `other`, and helpers that post with a real CSRF token."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.accounts.conftest import login, make_config, register  # noqa: F401
from tests.workflows.conftest import use_workflow  # noqa: F401
from webapp import actors
from webapp.admin import grants

ADMIN = "root@example.com"
PLAIN = "pat@example.com"


def token(client: FlaskClient, path: str = "/admin/runs") -> str:
    html = client.get(path).get_data(as_text=True)
    match = re.search(r'<meta name="csrf-token" content="([^"]+)"', html)
    assert match, f"{path} has no csrf-token meta tag"
    return match.group(1)


def post(client: FlaskClient, path: str, htmx: bool = False, **data: str) -> Any:
    data.setdefault("csrf_token", token(client))
    return client.post(path, data=data, headers={"HX-Request": "true"} if htmx else {})


def make_admin(address: str) -> None:
    grants.set_admin(address, True, actors.operator())


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
