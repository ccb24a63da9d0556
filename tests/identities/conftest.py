"""The identity tests run against real OpenID Providers (idpyoidc's, started
here on 127.0.0.1: tests/identities/op.py), two of them so an answer can come
from the wrong one; the app is configured with both, as `OIDC_ACME_*` and
`OIDC_OTHER_*` would configure it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from flask.testing import FlaskClient

from tests.identities.op import Provider
from tests.support.accounts import CHEAP
from tests.support.web import post
from webapp.accounts.identities import protocol
from webapp.core.identity_providers import OIDC, ProviderSettings

SECRET = "client-secret-0123456789"
BASE = "http://localhost"


def _provider(name: str) -> Provider:
    op = Provider()
    # Both callbacks: `other` plays a provider that answers to acme's callback
    # too (a mix-up attack needs a provider willing to).
    op.add_client("webapp", SECRET, *(f"{BASE}/login/with/{n}/callback" for n in ("acme", "other")))
    op.add_client("another-app", SECRET, "http://elsewhere.example/callback")
    return op.start()


@pytest.fixture(scope="session")
def ops() -> Iterator[dict[str, Provider]]:
    started = {"acme": _provider("acme"), "other": _provider("other")}
    yield started
    for op in started.values():
        op.stop()


@pytest.fixture
def op(ops: dict[str, Provider]) -> Iterator[Provider]:
    acme = ops["acme"]
    acme.users.clear()
    acme.tamper = None
    yield acme
    acme.tamper = None


def settings(ops: dict[str, Provider]) -> tuple[ProviderSettings, ...]:
    return tuple(
        ProviderSettings(name, OIDC, name.title(), "webapp", SECRET, issuer=p.issuer)
        for name, p in ops.items()
    )


@pytest.fixture
def config_defaults(ops: dict[str, Provider]) -> dict[str, Any]:
    for p in settings(ops):
        protocol.forget(p)  # each test discovers the providers afresh
    return {**CHEAP, "identity_providers": settings(ops)}


def at_provider(client: FlaskClient, name: str = "acme", **form: str) -> str:
    """Press "Continue with <Label>": the provider's authorization URL."""
    resp = post(client, f"/login/with/{name}", **form)
    assert resp.status_code == 302, resp.get_data(as_text=True)[:500]
    return str(resp.headers["Location"])


def authorize(url: str) -> str:
    """The provider signs its user in (no form) and answers: the app's callback path."""
    resp = httpx.get(url, follow_redirects=False, timeout=5)
    assert resp.status_code in (302, 303), resp.text[:500]
    location = urlsplit(resp.headers["Location"])
    assert f"{location.scheme}://{location.netloc}" == BASE
    return f"{location.path}?{location.query}"


def round_trip(client: FlaskClient, name: str = "acme", **form: str) -> Any:
    """Continue with the provider and come back: the app's answer to the callback."""
    return client.get(authorize(at_provider(client, name, **form)))
