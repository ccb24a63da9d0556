"""The session cookie, opened once per process and value (webapp/core/security.py,
`SessionInterface`): a kept value is checked like a new one."""

from __future__ import annotations

import time
from typing import Any

import itsdangerous.timed
import pytest
from flask import Flask
from flask.testing import FlaskClient

from webapp.core import security


def _is_sign_in_redirect(resp: Any) -> bool:
    return resp.status_code == 302 and resp.headers["Location"].startswith("/login")


class _Later:
    """`time` as itsdangerous sees it, `ahead` seconds later."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def time(self) -> float:
        return time.time() + self.ahead


def test_a_kept_cookie_is_refused_once_older_than_the_session_lifetime(
    app: Flask, client: FlaskClient, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    interface = app.session_interface
    assert isinstance(interface, security.SessionInterface)
    assert client.get("/profile").status_code == 200
    assert client.get("/profile").status_code == 200  # now opened from what was kept
    lifetime = app.permanent_session_lifetime.total_seconds()
    later = _Later(lifetime + 5)
    monkeypatch.setattr(itsdangerous.timed, "time", later)  # what signs and checks
    interface.clock = later.time  # type: ignore[method-assign]
    assert _is_sign_in_redirect(client.get("/profile"))


def test_a_cookie_signed_with_other_keys_is_refused_though_kept(
    app: Flask, client: FlaskClient, user: Any
) -> None:
    assert client.get("/profile").status_code == 200
    cookie = client.get_cookie("session")
    assert cookie is not None
    other = app.test_client()
    head, _, sig = cookie.value.rpartition(".")
    other.set_cookie("session", f"{head}.{'A' if sig[0] != 'A' else 'B'}{sig[1:]}")
    assert _is_sign_in_redirect(other.get("/profile"))
    app.secret_key = "another-secret-key-" + "x" * 32  # a rotation without fallback
    assert _is_sign_in_redirect(client.get("/profile"))
