"""Passkey autofill on the server (docs/accounts.md, "Passkey autofill"): the
same two endpoints as "Sign in with a passkey", with `mediation=conditional`.
Its challenge has a purpose of its own, so the button's request and the
autofill request never void each other (the page holds both at once) and an
answer never crosses from one to the other; its options (asked at every page
load) count against `passkey-autofill-ip`, not against sign-in attempts."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from tests.support.accounts import login
from tests.support.authenticator import Authenticator
from tests.support.passkeys import SIGNIN, SIGNIN_OPTIONS, add, options_json, send
from tests.support.web import csrf_token
from webapp.accounts import ratelimit
from webapp.accounts.factors.tables import webauthn_challenges
from webapp.core import db

AUTOFILL = {"mediation": "conditional"}


def signed_out_with_a_passkey(client: FlaskClient) -> Authenticator:
    auth = Authenticator()
    assert add(client, auth).status_code == 200
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    return auth


def test_the_login_page_offers_passkeys_in_the_email_fields_autofill(
    app: Any, client: FlaskClient
) -> None:
    page = client.get("/login").get_data(as_text=True)
    assert 'name="email" type="email" autocomplete="username webauthn"' in page
    assert "data-passkey-autofill" in page and 'name="mediation" value=""' in page
    assert 'data-testid="passkey-signin-button"' in page  # the button stays


def test_an_autofill_answer_signs_in_with_its_own_challenge(
    app: Any, client: FlaskClient, user: Any
) -> None:
    auth = signed_out_with_a_passkey(client)
    autofill = options_json(client, SIGNIN_OPTIONS, **AUTOFILL)
    button = options_json(client, SIGNIN_OPTIONS)  # the person clicks the button meanwhile
    assert autofill["challenge"] != button["challenge"]
    assert autofill["userVerification"] == button["userVerification"] == "required"
    assert "allowCredentials" not in autofill or autofill["allowCredentials"] == []
    with db.reading() as conn:
        purposes = sorted(conn.execute(select(webauthn_challenges.c.purpose)).scalars())
    assert purposes == ["autofill", "signin"]  # the button's did not void the autofill's
    # An answer to one is no answer to the other.
    r = send(client, SIGNIN, auth.get(autofill))
    assert r.status_code == 422 and "This passkey request has expired" in r.get_data(as_text=True)
    again = options_json(client, SIGNIN_OPTIONS, **AUTOFILL)  # the page loads again
    r = send(client, SIGNIN + "?next=/privacy", auth.get(again), **AUTOFILL)
    assert r.status_code == 302 and r.headers["Location"] == "/privacy"
    assert client.get("/profile").status_code == 200


def test_autofill_options_do_not_use_up_the_sign_in_attempts(
    app: Any, client: FlaskClient, user: Any
) -> None:
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    token = csrf_token(client, "/login")

    def autofill_options() -> int:
        return client.post(
            SIGNIN_OPTIONS, data=AUTOFILL, headers={"X-CSRFToken": token}
        ).status_code

    for _ in range(60):  # a page load each
        assert autofill_options() == 200
    assert autofill_options() == 429
    assert ratelimit.allowed("login-ip", "127.0.0.1")
    assert login(client, "ada@example.com").status_code == 302  # still free to sign in
