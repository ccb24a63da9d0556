"""Second factors as the tests use them: setting up the authenticator app
through the profile's real forms, reading the secret and the recovery codes
off the page as a person would, and the codes an app would show."""

from __future__ import annotations

import html as html_lib
import re
from datetime import timedelta
from typing import Any

import pyotp
from flask.testing import FlaskClient

from tests.support.web import post
from webapp.core import clock


def secret_on(page: str) -> str:
    match = re.search(r'data-testid="totp-secret">([A-Z2-7 ]+)<', page)
    assert match, "no secret shown"
    return match.group(1).replace(" ", "")


def codes_on(page: str) -> list[str]:
    box = page.partition('data-testid="recovery-codes"')[2].partition("</ol>")[0]
    return [html_lib.unescape(c) for c in re.findall(r"<code>([^<]+)</code>", box)]


def code(secret: str, later: float = 0) -> str:
    """What the app shows now (or `later` seconds from now), by the app's clock."""
    return pyotp.TOTP(secret).at(clock.now() + timedelta(seconds=later))


def start(client: FlaskClient) -> str:
    r = post(client, "/profile/factors/totp/start", htmx=True)
    assert r.status_code == 200, r.get_data(as_text=True)[:800]
    return secret_on(r.get_data(as_text=True))


def set_up(client: FlaskClient) -> tuple[str, list[str]]:
    """The app set up for the signed-in user: its secret and the recovery codes."""
    secret = start(client)
    r = post(client, "/profile/factors/totp/confirm", htmx=True, code=code(secret))
    assert r.status_code == 200, r.get_data(as_text=True)[:800]
    codes = codes_on(r.get_data(as_text=True))
    assert len(codes) == 10
    return secret, codes


def next_step(frozen: Any) -> None:
    """Move the frozen clock to the next 30-second time-step."""
    frozen.advance(30)
