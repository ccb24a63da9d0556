"""The new-device alert (issue 21, point 5): a sign-in from a browser the
account never used mails "New sign-in to your account" (time, browser, system,
shortened address, a link to Your devices and one to reset the password)
through the outbox. The browser is recognised by a long-lived signed device
cookie, never by its address; a forged or tampered cookie counts as none. The
first sign-in after registration sends nothing; restriction rules hold."""

from __future__ import annotations

import re
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from tests.devices.helpers import FIREFOX_WINDOWS, browser, signed_in
from tests.support.accounts import PASSWORD, body, login, mails, register
from tests.support.web import csrf_token, post
from webapp import create_app
from webapp.accounts import events as ev
from webapp.accounts.account import Account
from webapp.accounts.users import get_user, stream_of
from webapp.core import db
from webapp.devices import alert, cookie
from webapp.devices.tables import known_devices
from webapp.eventstore import read_stream
from webapp.mail.outbox.tables import mail_outbox

SUBJECT = "New sign-in to your account"


def sign_out(client: FlaskClient) -> None:
    assert (
        client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")}).status_code
        == 302
    )


def alerts() -> list[Any]:
    with db.reading() as conn:
        return list(
            conn.execute(select(mail_outbox).where(mail_outbox.c.kind == alert.NEW_DEVICE_MAIL))
        )


def event_types(user_id: str) -> list[str]:
    with db.reading() as conn:
        return [e.type for e in read_stream(conn, stream_of("default", user_id))]


def test_the_first_sign_in_after_registration_sends_no_alert(
    app: Any, client: FlaskClient, user: Any
) -> None:
    assert alerts() == []
    assert ev.NEW_DEVICE_SIGNED_IN not in event_types(user.id)
    assert client.get_cookie("device") is not None  # the browser is known from now on


def test_signing_in_again_in_the_same_browser_sends_no_alert(
    app: Any, client: FlaskClient, user: Any
) -> None:
    sign_out(client)
    assert login(client, "ada@example.com").status_code == 302
    assert alerts() == []


def test_a_new_browser_gets_the_alert_through_the_outbox(
    app: Any, client: FlaskClient, user: Any, work: Any
) -> None:
    signed_in(app, agent=FIREFOX_WINDOWS, address="2001:db8:abcd:12::1")
    [row] = alerts()
    assert row.status == "pending" and row.recipient == "ada@example.com"  # committed with it
    assert event_types(user.id)[-1] == ev.NEW_DEVICE_SIGNED_IN
    work()
    [mail] = [m for m in mails(app) if m["Subject"] == SUBJECT]
    text = body(mail)
    assert mail["To"] == "ada@example.com"
    assert "Browser: Firefox 121" in text and "System: Windows 10" in text
    assert "Address: 2001:db8:abcd::/48" in text and "2001:db8:abcd:12" not in text
    assert re.search(r"Time: .*\d{4}.* UTC", text)
    assert "http://localhost/profile#profile-devices" in text
    assert "http://localhost/reset-password" in text
    activity = client.get("/privacy").get_data(as_text=True)
    assert "Signed in on a new device" in activity and "New sign-in alert sent" in activity


def test_the_same_address_in_a_new_browser_still_alerts(
    app: Any, client: FlaskClient, user: Any
) -> None:
    """The browser is what is recognised, not the address (both come from 127.0.0.1)."""
    second = app.test_client()
    assert login(second, "ada@example.com").status_code == 302
    assert len(alerts()) == 1


def test_a_known_browser_from_another_address_sends_no_alert(
    app: Any, client: FlaskClient, user: Any
) -> None:
    travelling = browser(app, address="198.51.100.9")
    device = client.get_cookie("device")
    assert device is not None
    travelling.set_cookie("device", device.value)
    assert login(travelling, "ada@example.com").status_code == 302
    assert alerts() == []


def test_a_forged_or_tampered_device_cookie_counts_as_a_new_browser(
    app: Any, client: FlaskClient, user: Any
) -> None:
    device = client.get_cookie("device")
    assert device is not None
    real = device.value
    payload, _, signature = real.rpartition(".")
    # The first character: all six of its bits are signature (the last one's
    # low bits are base64 padding, so changing it may leave the bytes equal).
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    with app.test_request_context():
        known_id = cookie._signer().loads(real)
    forged = [
        f"{payload}.{flipped}",  # signature tampered
        known_id,  # the bare id, unsigned
        "garbage",
        "x" * 4000,
    ]
    for value in forged:
        c = app.test_client()
        c.set_cookie("device", value)
        assert login(c, "ada@example.com").status_code == 302
        assert c.get_cookie("device").value != value  # a fresh, signed one replaces it
    assert len(alerts()) == len(forged)


def test_a_cookie_signed_with_another_secret_key_is_not_recognised(
    app: Any, client: FlaskClient, user: Any, make_config: Any
) -> None:
    device = client.get_cookie("device")
    assert device is not None
    other = create_app(make_config(secret_key="another-secret-key-0123456789abc"))
    with other.test_request_context():
        with app.test_request_context():
            known_id = cookie._signer().loads(device.value)
        resigned = cookie.URLSafeSerializer(other.config["SECRET_KEY"], salt=cookie._SALT).dumps(
            known_id
        )
    c = app.test_client()
    c.set_cookie("device", resigned)
    assert login(c, "ada@example.com").status_code == 302
    assert len(alerts()) == 1


def test_the_alert_is_in_the_users_language(
    app: Any, client: FlaskClient, user: Any, work: Any
) -> None:
    assert post(client, "/profile/language", language="de").status_code == 200
    signed_in(app)
    work()
    [mail] = [m for m in mails(app) if m["Subject"] == "Neue Anmeldung bei Ihrem Konto"]
    assert "Browser: Chrome 120" in body(mail) and "Adresse: 203.0.113.x" in body(mail)


def test_a_restricted_account_gets_no_alert(app: Any, client: FlaskClient, user: Any) -> None:
    assert post(client, "/privacy/restrict", current_password=PASSWORD).status_code in (200, 302)
    c = browser(app)
    assert login(c, "ada@example.com").status_code == 403  # refused: nothing is recorded
    assert alerts() == []
    assert ev.NEW_DEVICE_SIGNED_IN not in event_types(user.id)
    with db.reading() as conn:
        restricted = get_user(conn, user.id)
    assert not Account(restricted).accepts_mail(alert.NEW_DEVICE_MAIL)


def test_the_device_cookie_is_long_lived_httponly_and_lax(app: Any, client: FlaskClient) -> None:
    assert register(client, "ada@example.com").status_code == 200
    resp = login(client, "ada@example.com")
    [header] = [h for h in resp.headers.getlist("Set-Cookie") if h.startswith("device=")]
    assert "HttpOnly" in header and "SameSite=Lax" in header and "Path=/" in header
    assert "Max-Age=34560000" in header  # 400 days
    assert "Secure" not in header  # http BASE_URL; https: tests/accounts/test_cookies.py
    sign_out(client)
    assert client.get_cookie("device") is not None  # kept after signing out


def test_two_accounts_in_one_browser_are_known_separately(
    app: Any, client: FlaskClient, user: Any
) -> None:
    """Bob's first sign-in in ada's browser is his first: no alert for anyone."""
    sign_out(client)
    assert register(client, "bob@example.com").status_code == 200
    assert login(client, "bob@example.com").status_code == 302
    assert alerts() == []
    with db.reading() as conn:
        assert len(list(conn.execute(select(known_devices)))) == 2
