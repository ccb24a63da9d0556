"""Signing out devices (issue 21, points 4 and 3): "Sign out" per device and
"Sign out all other devices" ask for the current password first (the fresh
proof); a device signed out is refused at once on its next request and lands
on /login, its remember-me cookie too. Hostile input changes nothing: a made-up
or another account's handle, this device's own, a missing CSRF token."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.devices.helpers import FIREFOX_WINDOWS, ask, browser, handles, sign_out, signed_in
from tests.support.accounts import PASSWORD, login, register
from tests.support.web import csrf_token
from webapp.accounts import events as ev
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import stream_of
from webapp.core import db
from webapp.core.clock import FrozenClock
from webapp.eventstore import read_stream


@pytest.fixture(autouse=True)
def stale_proof(user: Any, clock: FrozenClock) -> None:
    """These tests sign out with the password step: the proof of the sign-in
    (made with `user`) is older than REAUTH_SECONDS by the time they act."""
    clock.advance(timedelta(seconds=301))


def other_handle(client: FlaskClient) -> str:
    found = handles(client.get("/profile").get_data(as_text=True))
    assert len(found) == 1, found
    return found[0]


def lands_on_login(c: FlaskClient) -> bool:
    resp = c.get("/profile")
    return resp.status_code == 302 and resp.headers["Location"].startswith("/login")


def test_the_list_button_asks_for_the_password_first_and_signs_out_nothing(
    app: Any, client: FlaskClient, user: Any
) -> None:
    phone = signed_in(app)
    resp = ask(client, other_handle(client), htmx=True)
    html = resp.get_data(as_text=True)
    assert resp.status_code == 200 and "<html" not in html  # the section's fragment
    assert "To sign out Chrome 120 (Linux), enter your current password." in html
    assert 'name="current_password"' in html and 'name="confirm" value="1"' in html
    assert phone.get("/profile").status_code == 200


def test_sign_out_a_device_refuses_its_next_request_at_once(
    app: Any, client: FlaskClient, user: Any
) -> None:
    phone = browser(app)
    assert login(phone, "ada@example.com", remember="y").status_code == 302
    remember = phone.get_cookie("remember_token")
    assert remember is not None and phone.get("/profile").status_code == 200
    resp = sign_out(client, other_handle(client), htmx=True)
    html = resp.get_data(as_text=True)
    assert resp.status_code == 200 and "The device is signed out." in html
    assert 'data-testid="devices-only-this"' in html
    assert lands_on_login(phone)
    thief = app.test_client()  # its remember-me cookie names the same sign-in
    thief.set_cookie("remember_token", remember.value)
    assert lands_on_login(thief)
    assert client.get("/profile").status_code == 200  # this device stays
    with db.reading() as conn:
        types = [e.type for e in read_stream(conn, stream_of("default", user.id))]
    assert types[-1] == ev.DEVICE_SIGNED_OUT
    activity = client.get("/privacy").get_data(as_text=True)
    assert "Device signed out" in activity


def test_sign_out_all_other_devices(app: Any, client: FlaskClient, user: Any) -> None:
    others = [signed_in(app), signed_in(app, agent=FIREFOX_WINDOWS)]
    resp = ask(client, "others")
    assert resp.status_code == 200
    assert "To sign out all other devices, enter your current password." in resp.get_data(
        as_text=True
    )
    resp = sign_out(client, "others")  # without JavaScript: the whole page
    html = resp.get_data(as_text=True)
    assert resp.status_code == 200 and "<html" in html
    assert "All other devices are signed out." in html
    assert all(lands_on_login(c) for c in others)
    assert client.get("/profile").status_code == 200
    with db.reading() as conn:
        types = [e.type for e in read_stream(conn, stream_of("default", user.id))]
    assert types.count(ev.DEVICE_SIGNED_OUT) == 2


def test_a_wrong_or_missing_password_signs_out_nothing(
    app: Any, client: FlaskClient, user: Any
) -> None:
    phone = signed_in(app)
    handle = other_handle(client)
    wrong = sign_out(client, handle, password="not my password", htmx=True)
    assert wrong.status_code == 422
    assert "The current password is not correct." in wrong.get_data(as_text=True)
    assert 'name="confirm" value="1"' in wrong.get_data(as_text=True)  # still the proof step
    missing = sign_out(client, handle, password="", htmx=True)
    assert missing.status_code == 422
    assert "Enter your current password." in missing.get_data(as_text=True)
    assert phone.get("/profile").status_code == 200


def test_wrong_passwords_are_limited_like_every_current_password_check(
    app: Any, client: FlaskClient, user: Any
) -> None:
    signed_in(app)
    handle = other_handle(client)
    codes = [sign_out(client, handle, password="wrong").status_code for _ in range(6)]
    assert codes == [422] * 5 + [429]
    assert sign_out(client, handle).status_code == 429  # the right one waits too


def test_another_accounts_device_cannot_be_signed_out(
    app: Any, client: FlaskClient, user: Any
) -> None:
    bob = browser(app, agent=FIREFOX_WINDOWS)
    assert register(bob, "bob@example.com").status_code == 200
    assert login(bob, "bob@example.com").status_code == 302
    bobs_phone = signed_in(app, email="bob@example.com")
    bobs_handle = handles(bob.get("/profile").get_data(as_text=True))[0]
    for resp in (ask(client, bobs_handle, htmx=True), sign_out(client, bobs_handle, htmx=True)):
        assert resp.status_code == 422
        assert "That device is no longer signed in." in resp.get_data(as_text=True)
    assert bobs_phone.get("/profile").status_code == 200


def test_garbage_and_this_devices_own_handle_are_refused(
    app: Any, client: FlaskClient, user: Any
) -> None:
    phone = signed_in(app)
    for garbage in ("", "x" * 32, "../../etc", "others;drop", "A" * 5000, "0" * 32):
        resp = sign_out(client, garbage, htmx=True)
        assert resp.status_code == 422, garbage
        assert "That device is no longer signed in." in resp.get_data(as_text=True)
    with db.reading() as conn:
        rows = conn.execute(user_sessions.select()).mappings().all()
    assert len(rows) == 2
    own = handles(phone.get("/profile").get_data(as_text=True))[0]  # ada's first browser
    for resp in (ask(client, own), sign_out(client, own)):
        assert resp.status_code == 422
        assert "That is the device you are using now" in resp.get_data(as_text=True)
    assert client.get("/profile").status_code == 200 and phone.get("/profile").status_code == 200


def test_without_a_csrf_token_nothing_is_signed_out(
    app: Any, client: FlaskClient, user: Any
) -> None:
    phone = signed_in(app)
    handle = other_handle(client)
    for token in ("", "forged-token"):
        resp = client.post(
            "/profile/devices",
            data={
                "device": handle,
                "confirm": "1",
                "current_password": PASSWORD,
                "csrf_token": token,
            },
        )
        assert resp.status_code == 400
    assert phone.get("/profile").status_code == 200


def test_signed_out_devices_sign_out_form_is_refused(
    app: Any, client: FlaskClient, user: Any
) -> None:
    """A browser signed out meanwhile posting the form it still shows: /login."""
    phone = signed_in(app)
    token = csrf_token(phone, "/profile")
    assert sign_out(client, other_handle(client)).status_code == 200
    resp = phone.post("/profile/devices", data={"device": "others", "csrf_token": token})
    assert resp.status_code == 302 and resp.headers["Location"].startswith("/login")
    assert client.get("/profile").status_code == 200


def test_a_device_gone_meanwhile_is_said_so(app: Any, client: FlaskClient, user: Any) -> None:
    phone = signed_in(app)
    handle = other_handle(client)
    token = csrf_token(phone, "/profile")
    assert phone.post("/logout", data={"csrf_token": token}).status_code == 302
    resp = sign_out(client, handle, htmx=True)
    assert resp.status_code == 422
    html = resp.get_data(as_text=True)
    assert "That device is no longer signed in." in html
    assert 'name="confirm"' not in html  # nothing left to confirm


def test_a_fresh_proof_signs_out_without_the_password_step(
    app: Any, client: FlaskClient, user: Any, clock: FrozenClock
) -> None:
    """Within REAUTH_SECONDS of a proof (here the password step itself), the
    next sign-out asks for nothing more."""
    first, second = signed_in(app), signed_in(app, agent=FIREFOX_WINDOWS)
    assert (
        sign_out(client, handles(client.get("/profile").get_data(as_text=True))[0]).status_code
        == 200
    )
    html = ask(client, handles(client.get("/profile").get_data(as_text=True))[0], htmx=True)
    body = html.get_data(as_text=True)
    assert "enter your current password" not in body and "The device is signed out." in body
    assert sum(lands_on_login(c) for c in (first, second)) == 2
