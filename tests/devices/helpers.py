"""Browsers as the devices tests use them: a test client with its own user agent
and client address, and the device list as the profile page shows it."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from tests.support.accounts import PASSWORD, login
from tests.support.web import post

CHROME_LINUX = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36"
)
FIREFOX_WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0"


def browser(app: Flask, agent: str = CHROME_LINUX, address: str = "203.0.113.7") -> FlaskClient:
    """A new browser (no cookies) with its user agent and address."""
    c = app.test_client()
    c.environ_base["HTTP_USER_AGENT"] = agent
    c.environ_base["REMOTE_ADDR"] = address
    return c


def signed_in(app: Flask, email: str = "ada@example.com", **kw: Any) -> FlaskClient:
    c = browser(app, **kw)
    assert login(c, email).status_code == 302
    return c


def handles(html: str) -> list[str]:
    """The handles of the list's "Sign out" buttons, in page order."""
    return re.findall(r'name="device" value="([0-9a-f]{32})"', html)


def sign_out(
    client: FlaskClient, device: str, password: str | None = PASSWORD, htmx: bool = False
) -> Any:
    """The proof step's submit (the list's button is `ask`)."""
    data = {"device": device, "confirm": "1"}
    if password is not None:
        data["current_password"] = password
    return post(client, "/profile/devices", htmx=htmx, **data)


def ask(client: FlaskClient, device: str, htmx: bool = False) -> Any:
    """The list's "Sign out" (or "Sign out all other devices") button."""
    return post(client, "/profile/devices", htmx=htmx, device=device)
