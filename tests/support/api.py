"""API test helpers: the `token` fixture (a real token of a tenant, with
scopes, made as `flask api-tokens create` makes it) and bearer headers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from webapp import tenants
from webapp.api import tokens
from webapp.core import db

ALL_SCOPES = tuple(tokens.SCOPES)


def bearer(secret: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", **more}


def make_token(*scopes: str, tenant: str = "default", name: str = "test") -> tuple[str, str]:
    """(token id, secret) of a new token."""
    with db.transaction() as conn:
        if tenant not in tenants.all_ids(conn):
            tenants.create(conn, tenant)
        token, secret = tokens.create(conn, name, scopes or ALL_SCOPES, tenant, "cli:test")
    return token.id, secret


@pytest.fixture
def token(app: Any) -> Callable[..., str]:
    """`token("runs:read", tenant="acme")`: the secret of a new token (every
    scope when none is named)."""

    def make(*scopes: str, tenant: str = "default") -> str:
        return make_token(*scopes, tenant=tenant)[1]

    return make


def problem(resp: Any, status: int) -> dict[str, Any]:
    """The problem details of an error answer, checked as RFC 9457 says."""
    assert resp.status_code == status, (resp.status_code, resp.get_data(as_text=True))
    assert resp.mimetype == "application/problem+json"
    body: dict[str, Any] = resp.get_json(force=True)
    assert body["status"] == status and body["type"].startswith("https://") and body["title"]
    text = resp.get_data(as_text=True)
    assert "Traceback" not in text and "SELECT" not in text and "sqlalchemy" not in text
    return body
