"""Findings 3, 4 and 8: signing out ends the session on the server and drops the
remember cookie; a deletion request ends every other session but this one.

Decision (docs/accounts.md): signing out ends this browser's session only; the
other browsers stay signed in ("Sign out other sessions" ends those)."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from tests.support.accounts import PASSWORD, login
from tests.support.web import csrf_token, post
from webapp import create_app


def _signed_in(client: FlaskClient) -> bool:
    return client.get("/profile").status_code == 200


def _sign_out(client: FlaskClient) -> Any:
    return client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})


def _with_cookie(app: Flask, name: str, value: str) -> FlaskClient:
    fresh = app.test_client()
    fresh.set_cookie(name, value)
    return fresh


def test_sign_out_deletes_the_remember_cookie(app: Flask, client: FlaskClient, user: Any) -> None:
    _sign_out(client)
    assert login(client, "ada@example.com", remember="on").status_code == 302
    assert client.get_cookie("remember_token") is not None
    r = _sign_out(client)
    assert r.status_code == 302
    assert any(
        h.startswith("remember_token=;") and "Expires=Thu, 01 Jan 1970" in h
        for h in r.headers.getlist("Set-Cookie")
    )
    assert client.get_cookie("remember_token") is None
    assert not _signed_in(client)


def test_a_session_cookie_copied_before_sign_out_is_refused(
    app: Flask, client: Any, user: Any
) -> None:
    stolen = client.get_cookie("session").value
    assert _signed_in(_with_cookie(app, "session", stolen))
    _sign_out(client)
    assert not _signed_in(_with_cookie(app, "session", stolen))


def test_a_remember_cookie_copied_before_sign_out_is_refused(
    app: Flask, client: FlaskClient, user: Any
) -> None:
    _sign_out(client)
    login(client, "ada@example.com", remember="on")
    stolen = client.get_cookie("remember_token").value  # type: ignore[union-attr]
    assert _signed_in(_with_cookie(app, "remember_token", stolen))
    _sign_out(client)
    assert not _signed_in(_with_cookie(app, "remember_token", stolen))


def test_signing_out_one_browser_leaves_the_others_signed_in(
    client: FlaskClient, other_client: FlaskClient, user: Any
) -> None:
    assert login(other_client, "ada@example.com").status_code == 302
    _sign_out(client)
    assert not _signed_in(client)
    assert _signed_in(other_client)


def test_sign_out_other_sessions_keeps_this_one_after_the_rows_change(
    client: FlaskClient, other_client: FlaskClient, user: Any
) -> None:
    login(other_client, "ada@example.com", remember="on")
    assert post(client, "/profile/sessions").status_code == 200
    assert _signed_in(client)
    assert not _signed_in(other_client)


def test_a_deletion_request_ends_every_other_session_but_this_one(
    client: FlaskClient, other_client: FlaskClient, user: Any
) -> None:
    assert login(other_client, "ada@example.com", remember="on").status_code == 302
    page = client.get("/profile").get_data(as_text=True)
    assert "signs you out on every other device at once" in page
    assert "this browser stays signed in" in page
    r = post(client, "/profile/delete", current_password=PASSWORD)
    assert r.status_code == 200
    assert not _signed_in(other_client)
    assert _signed_in(client)  # so the user can cancel
    r = post(client, "/profile/cancel-deletion")
    assert r.status_code == 200
    assert "Cancel deletion" not in client.get("/profile").get_data(as_text=True)


def test_a_session_ended_in_one_process_is_refused_by_another_at_once(
    app: Flask, client: FlaskClient, user: Any, make_config: Any
) -> None:
    """Two app instances on one database (two gunicorn workers): "Sign out other
    sessions" in one ends a session the other had just served its kept page to,
    on that session's very next request (nothing of the session is cached)."""
    elsewhere = create_app(make_config())
    other = elsewhere.test_client()
    assert login(other, "ada@example.com").status_code == 302
    for _ in range(2):  # rendered, then served from the kept page
        assert _signed_in(other)
    assert post(client, "/profile/sessions").status_code == 200
    assert not _signed_in(other)
    assert other.get("/profile", headers={"HX-Request": "true"}).status_code == 401
    # And signing out in the other process: this browser's copy is refused here.
    copy = _with_cookie(app, "session", client.get_cookie("session").value)  # type: ignore[union-attr]
    assert _signed_in(copy)
    moved = elsewhere.test_client()
    moved.set_cookie("session", client.get_cookie("session").value)  # type: ignore[union-attr]
    assert _signed_in(moved)
    _sign_out(moved)
    assert not _signed_in(copy) and not _signed_in(client)
