"""`next` only ever sends the user to a path on this site.

Browsers strip C0 controls and spaces at both ends of a URL, drop tab/CR/LF
anywhere and read `\\` as `/` before resolving it, so each value below would
leave the site if it were echoed into `Location`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.accounts import login, register

HOSTILE = [
    "//evil.example",
    "///evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "/\r\n/evil.example",
    " //evil.example",
    "\x01//evil.example",
    "//evil.example\x00",
    "/%09/evil.example",
    "/%2F/evil.example",
    "/%5Cevil.example",
    "/.//evil.example",
    "/./\\evil.example",
    "/../evil.example",
    "https://evil.example",
    "HTTPS://evil.example/profile",
    "https:evil.example",
    "javascript:alert(1)",
    " javascript:alert(1)",
    "evil.example",
    "/profile\r\nSet-Cookie: x=1",
    "",
]


def _assert_on_this_site(location: str) -> None:
    assert location == "/profile", location
    assert not urlsplit(location).netloc


@pytest.mark.parametrize("target", HOSTILE, ids=repr)
def test_a_hostile_next_sends_the_signed_in_user_to_the_profile(client: Any, target: str) -> None:
    register(client, "ada@example.com")
    r = login(client, "ada@example.com", next=target)
    assert r.status_code == 302  # never a 500, even for CR/LF
    _assert_on_this_site(r.headers["Location"])
    again = client.get("/login", query_string={"next": target})  # already signed in
    assert again.status_code == 302
    _assert_on_this_site(again.headers["Location"])


@pytest.mark.parametrize("target", HOSTILE, ids=repr)
def test_the_login_page_never_echoes_a_hostile_next(client: Any, target: str) -> None:
    html = client.get("/login", query_string={"next": target}).get_data(as_text=True)
    assert '<form method="post" action="/login" ' in html  # no next carried along
    assert "evil" not in html and "javascript:" not in html and "Set-Cookie" not in html


def test_a_same_site_path_is_kept(client: Any) -> None:
    html = client.get("/login", query_string={"next": "/profile"}).get_data(as_text=True)
    assert '<form method="post" action="/login?next=/profile" ' in html
    register(client, "ada@example.com")
    r = login(client, "ada@example.com", next="/profile?section=email#profile-email")
    assert r.status_code == 302
    assert r.headers["Location"] == "/profile?section=email#profile-email"
