"""The GitHub preset (OAuth 2 and its REST API), against a local stand-in for
GitHub's endpoints: only a verified primary address counts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from flask.testing import FlaskClient

from tests.identities.github_standin import GitHub
from tests.support.accounts import CHEAP, user_row
from tests.support.web import post
from webapp.core.config import Config

SECRET = "github-secret-0123456789"


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    g = GitHub("gh-client", SECRET)
    yield g
    g.stop()


@pytest.fixture
def config_defaults(github: GitHub) -> dict[str, Any]:
    env = {
        "SECRET_KEY": "x" * 32,
        "GITHUB_CLIENT_ID": "gh-client",
        "GITHUB_CLIENT_SECRET": SECRET,
        "GITHUB_URL": github.url,
        "GITHUB_API_URL": github.url,
    }
    return {**CHEAP, "identity_providers": Config.from_env(env).identity_providers}


def round_trip(client: FlaskClient, github: GitHub) -> Any:
    start = post(client, "/login/with/github")
    assert start.status_code == 302
    url = start.headers["Location"]
    assert url.startswith(f"{github.url}/login/oauth/authorize?")
    back = httpx.get(url, follow_redirects=False)
    assert back.status_code == 302, back.text
    loc = urlsplit(back.headers["Location"])
    return client.get(f"{loc.path}?{loc.query}")


def test_the_sign_in_page_offers_github(client: FlaskClient) -> None:
    assert "Continue with GitHub" in client.get("/login").get_data(as_text=True)


def test_a_verified_primary_address_signs_up(client: FlaskClient, github: GitHub) -> None:
    github.user = {"id": 1001, "login": "octo"}
    github.emails = [
        {"email": "unverified@example.com", "primary": False, "verified": False},
        {"email": "octo@example.com", "primary": True, "verified": True},
        {"email": "second@example.com", "primary": False, "verified": True},
    ]
    resp = round_trip(client, github)
    assert resp.status_code == 302 and resp.headers["Location"] == "/profile"
    row = user_row("octo@example.com")
    assert row is not None and row.email_verified
    assert user_row("second@example.com") is None


@pytest.mark.parametrize(
    "emails",
    [
        [{"email": "octo@example.com", "primary": True, "verified": False}],  # primary, unverified
        [
            {"email": "octo@example.com", "primary": False, "verified": True}
        ],  # verified, not primary
        [],
    ],
    ids=["primary-unverified", "verified-not-primary", "none"],
)
def test_without_a_verified_primary_address_the_person_names_one(
    client: FlaskClient, github: GitHub, emails: list[dict[str, Any]]
) -> None:
    github.user = {"id": 1002, "login": "hubot"}
    github.emails = emails
    resp = round_trip(client, github)
    assert resp.status_code == 200
    assert "GitHub did not give us a verified email address" in resp.get_data(as_text=True)
    assert user_row("octo@example.com") is None
    assert client.get("/profile").status_code == 302  # not signed in


def test_a_refused_code_signs_nobody_in(client: FlaskClient, github: GitHub) -> None:
    start = post(client, "/login/with/github")
    state = dict(p.split("=") for p in urlsplit(start.headers["Location"]).query.split("&"))[
        "state"
    ]
    resp = client.get(f"/login/with/github/callback?code=made-up&state={state}")
    assert resp.status_code == 302
    html = client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "GitHub did not confirm this sign-in" in html
    assert client.get("/profile").status_code == 302
