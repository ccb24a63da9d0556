"""Cookies secure by default (issue 21, point 9): under an https `BASE_URL`
every cookie the product sets (session, remember-me, device) is Secure, unless
`SESSION_COOKIE_SECURE=false` is set explicitly (then start-up warns); under
http (`make run`) none is."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.support.accounts import PASSWORD, login, register
from tests.support.web import FreshGClient, csrf_token, post
from webapp import create_app
from webapp.core.config import Config

WARNING = "SESSION_COOKIE_SECURE=false with an https BASE_URL"


def signed_in_cookies(make_config: Any, **settings: Any) -> list[str]:
    """Every Set-Cookie header of a remember-me sign-in and of the sign-out,
    on an app with `settings`, over https as the browser would use it."""
    app = create_app(make_config(**settings))
    app.test_client_class = FreshGClient
    headers: list[str] = []
    with app.app_context():
        c: FlaskClient = app.test_client()
        c.environ_base["wsgi.url_scheme"] = "https"
        for r in (
            register(c, "ada@example.com"),
            login(c, "ada@example.com", remember="y"),
            post(c, "/profile/language", language="de"),
            c.post("/logout", data={"csrf_token": csrf_token(c, "/profile")}),
        ):
            assert r.status_code in (200, 302), r.status_code
            headers += r.headers.getlist("Set-Cookie")
    names = {h.split("=", 1)[0] for h in headers}
    assert {"session", "remember_token", "device"} <= names, names
    return headers


def test_https_base_url_makes_every_cookie_secure(app: Any, make_config: Any, caplog: Any) -> None:
    caplog.set_level(logging.WARNING)
    headers = signed_in_cookies(make_config, base_url="https://accounts.example.com")
    insecure = [h for h in headers if "; Secure" not in h]
    assert not insecure
    assert WARNING not in caplog.text


def test_explicit_false_under_https_warns_and_sets_no_secure(
    app: Any, make_config: Any, caplog: Any
) -> None:
    caplog.set_level(logging.WARNING)
    headers = signed_in_cookies(
        make_config, base_url="https://accounts.example.com", session_cookie_secure=False
    )
    assert not [h for h in headers if "Secure" in h]
    warned = [r for r in caplog.records if WARNING in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING


def test_http_base_url_sets_no_secure_cookie(app: Any, make_config: Any, caplog: Any) -> None:
    caplog.set_level(logging.WARNING)
    headers = signed_in_cookies(make_config, base_url="http://127.0.0.1:5000")
    assert not [h for h in headers if "Secure" in h]
    assert WARNING not in caplog.text


def test_http_sign_in_keeps_working(client: Any) -> None:
    """`make run`'s default: http://, cookies not Secure, so the browser sends them."""
    register(client, "ada@example.com")
    assert login(client, "ada@example.com", PASSWORD).status_code == 302
    assert client.get("/profile").status_code == 200


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"INSTANCE_PATH": str(tmp_path), **values}


@pytest.mark.parametrize(
    ("base_url", "setting", "secure"),
    [
        ("", "", False),  # make run: http://localhost:5000
        ("http://localhost:5000", "", False),
        ("https://accounts.example.com", "", True),
        ("HTTPS://accounts.example.com", "", True),
        ("https://accounts.example.com", "false", False),
        ("https://accounts.example.com", "0", False),
        ("https://accounts.example.com", "true", True),
        ("http://localhost:5000", "true", True),  # asked for: Secure even over http
    ],
)
def test_the_setting_follows_base_url_unless_set(
    tmp_path: Path, base_url: str, setting: str, secure: bool
) -> None:
    values = {"BASE_URL": base_url, "SESSION_COOKIE_SECURE": setting}
    cfg = Config.from_env(env(tmp_path, **{k: v for k, v in values.items() if v}))
    assert cfg.cookies_secure is secure
    assert cfg.insecure_cookies_over_https is (base_url.lower().startswith("https") and not secure)
