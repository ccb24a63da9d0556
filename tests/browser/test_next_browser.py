"""In real Chromium: hostile `next` values, including those a browser
normalises into another host, leave the signed-in user on this site."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from tests.browser import flows

HOSTILE = [
    "/\t/evil.example",
    "/\\evil.example",
    " //evil.example",
    "///evil.example",
    "/.//evil.example",
    "\x01//evil.example",
    "/%09/evil.example",
    "https://evil.example",
]


def test_hostile_next_values_all_end_on_this_site(page: Any, server: str) -> None:
    flows.register(page, server, "ada@example.com")
    # Signing in with a hostile next ...
    page.goto(f"{server}/login?next={quote(HOSTILE[0], safe='')}")
    flows.fill_sign_in(page, "ada@example.com")
    page.wait_for_url(f"{server}/profile")
    # ... and each value again while signed in (`/login` redirects at once).
    for value in HOSTILE:
        page.goto(f"{server}/login?next={quote(value, safe='')}")
        assert page.url == f"{server}/profile", (value, page.url)
