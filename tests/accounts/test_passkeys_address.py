"""Passkeys and the site's address (issue 34, point 1): browsers refuse an IP
address as the RP ID (BASE_URL's host), so `make run`'s default BASE_URL is
http://localhost:$PORT (tests/test_config.py), a BASE_URL on an IP address
logs a warning once at start-up, and the browser's SecurityError (the page
opened by an IP address, or BASE_URL itself one) gets a message naming the
cause instead of "cancelled or timed out", in English and German. The same
in real Chromium: tests/browser/test_passkeys_make_run_browser.py."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.passkeys import ADD, REAUTH, SIGNIN
from tests.support.web import csrf_token, post
from webapp import create_app
from webapp.core.config import Config

WARNING = "BASE_URL's host is an IP address: browsers refuse passkeys there"
ADDRESS = (
    "Passkeys work only when this site is opened at http://localhost, "
    "by its domain name and not by an IP address."
)
IP_SITE = "Passkeys cannot be used on this site: its address is an IP address"
CANCELLED = "cancelled or timed out"


def warnings_at_start(make_config: Any, caplog: Any, base_url: str) -> list[str]:
    caplog.clear()
    caplog.set_level(logging.WARNING)
    create_app(make_config(base_url=base_url))
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


@pytest.mark.parametrize(
    ("base_url", "suggested"),
    [
        ("http://127.0.0.1:5000", "http://localhost:5000"),
        ("http://[::1]:8080", "http://localhost:8080"),
        ("https://192.0.2.7", "http://localhost)"),
    ],
)
def test_an_ip_address_base_url_warns_once_at_start_up(
    app: Any, make_config: Any, caplog: Any, base_url: str, suggested: str
) -> None:
    warned = warnings_at_start(make_config, caplog, base_url)
    assert len(warned) == 1, warned
    assert suggested in warned[0]
    (record,) = [r for r in caplog.records if WARNING in r.getMessage()]
    assert record.levelno == logging.WARNING and record.__dict__["base_url"] == base_url


def test_a_domain_name_and_make_runs_default_do_not_warn(
    app: Any, make_config: Any, caplog: Any, tmp_path: Path
) -> None:
    default = Config.from_env({"INSTANCE_PATH": str(tmp_path / "run")}).base_url
    for base_url in (default, "http://localhost:5000", "https://accounts.example.com"):
        assert warnings_at_start(make_config, caplog, base_url) == [], base_url


def page_of(r: Any, status: int = 422) -> str:
    html = r.get_data(as_text=True)
    assert r.status_code == status, html[:600]
    return str(html)


def test_a_security_error_names_the_address_wherever_a_passkey_is_asked(
    app: Any, client: Any, user: Any
) -> None:
    """Adding one and *Confirm it's you* in the profile, signing in on /login."""
    for path in (ADD, REAUTH):
        r = post(
            client, path, htmx=True, name="Laptop", credential="", client_error="SecurityError"
        )
        html = page_of(r)
        assert ADDRESS in html and CANCELLED not in html, path
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    html = page_of(post(client, SIGNIN, credential="", client_error="SecurityError"))
    assert ADDRESS in html and CANCELLED not in html
    # Any other error is still a cancelled or timed-out request.
    html = page_of(post(client, SIGNIN, credential="", client_error="NotAllowedError"))
    assert CANCELLED in html and ADDRESS not in html


def test_the_address_message_in_german(app: Any, client: Any, user: Any) -> None:
    assert post(client, "/profile/language", language="de").status_code == 200
    r = post(client, ADD, htmx=True, name="Laptop", credential="", client_error="SecurityError")
    assert (
        "Passkeys funktionieren nur, wenn diese Seite unter http://localhost geöffnet wird, "
        "also über ihren Domainnamen und nicht über eine IP-Adresse."
    ) in page_of(r)


def test_under_an_ip_address_base_url_the_page_says_passkeys_cannot_work_here(
    app: Any, client: Any, user: Any
) -> None:
    """No address to suggest: the operator must change BASE_URL (warned above)."""
    cfg = app.config["APP_CONFIG"]
    app.config["APP_CONFIG"] = dataclasses.replace(cfg, base_url="http://127.0.0.1:5000")
    r = post(client, ADD, htmx=True, name="Laptop", credential="", client_error="SecurityError")
    html = page_of(r)
    assert IP_SITE in html and CANCELLED not in html
    assert post(client, "/profile/language", language="de").status_code == 200
    r = post(client, ADD, htmx=True, name="Laptop", credential="", client_error="SecurityError")
    assert "Die Adresse der Seite ist eine IP-Adresse" in page_of(r)
