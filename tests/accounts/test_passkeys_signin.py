"""Signing in with a passkey (issue 21, point 2): "Sign in with a passkey" on
/login needs no address (a discoverable passkey names its account) and ends
like every sign-in (a session row, Your devices, the new-device alert, the
restriction rules); after the password a passkey is a second factor ("Use a
passkey instead"; an account with only a passkey is asked for it). Hostile
answers sign nobody in: a tampered signature, origin or challenge, another
session's, a replayed or an expired challenge, an unknown passkey, a sign
count that went back, no user verification where it is the only factor."""

from __future__ import annotations

import json
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from tests.support.accounts import PASSWORD, login, register
from tests.support.authenticator import Authenticator, Credential
from tests.support.factors import set_up
from tests.support.passkeys import (
    SIGNIN,
    SIGNIN_OPTIONS,
    STEP,
    STEP_OPTIONS,
    add,
    options_json,
    send,
    sign_in,
)
from tests.support.web import csrf_token, post
from webapp.accounts.factors.passkeys import b64, unb64
from webapp.accounts.factors.tables import user_factors, webauthn_challenges
from webapp.accounts.tables import user_sessions
from webapp.core import db
from webapp.devices import alert
from webapp.mail.outbox.tables import mail_outbox

ADA = "ada@example.com"


def sign_out(client: FlaskClient) -> None:
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})


def signed_in(client: FlaskClient) -> bool:
    return client.get("/profile").status_code == 200


def with_passkey(client: FlaskClient) -> Authenticator:
    auth = Authenticator()
    assert add(client, auth).status_code == 200
    sign_out(client)
    return auth


def refused(r: Any, text: str, status: int = 422) -> None:
    page = r.get_data(as_text=True)
    assert r.status_code == status, page[:600]
    assert text in page, page[:2000]


def passkey_handle() -> str:
    with db.reading() as conn:
        return str(conn.execute(select(user_factors.c.user_handle)).scalar_one())


def sessions() -> int:
    with db.reading() as conn:
        return len(conn.execute(select(user_sessions.c.digest)).all())


def test_sign_in_with_a_passkey_needs_no_address(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    auth = with_passkey(client)
    page = client.get("/login").get_data(as_text=True)
    assert 'data-testid="passkey-signin-button"' in page and "passkeys.js" in page
    opts = options_json(client, SIGNIN_OPTIONS)
    assert "allowCredentials" not in opts or opts["allowCredentials"] == []
    assert opts["userVerification"] == "required" and opts["rpId"] == "localhost"
    r = send(client, SIGNIN + "?next=/privacy", auth.get(opts))
    assert r.status_code == 302 and r.headers["Location"] == "/privacy"
    assert signed_in(client) and sessions() == 1
    with db.reading() as conn:
        row = conn.execute(select(user_factors.c.sign_count, user_factors.c.last_used_at)).one()
    assert row.sign_count == 1 and row.last_used_at is not None
    # The sign-in is a proof of identity: factor changes go through at once.
    assert 'data-testid="passkey-remove"' in client.get("/profile").get_data(as_text=True)


def test_a_passkey_sign_in_in_a_new_browser_alerts_like_a_password_one(
    app: Any, client: Any, other_client: Any, user: Any
) -> None:
    auth = with_passkey(client)  # a synced passkey: usable in another browser too
    assert sign_in(client, auth).status_code == 302  # the known browser: no alert

    def alerts() -> int:
        with db.reading() as conn:
            kind = mail_outbox.c.kind == alert.NEW_DEVICE_MAIL
            return len(conn.execute(select(mail_outbox.c.id).where(kind)).all())

    assert alerts() == 0
    assert sign_in(other_client, auth).status_code == 302
    assert alerts() == 1 and sessions() == 2
    devices = client.get("/profile").get_data(as_text=True).count('data-testid="device"')
    assert devices == 2


def test_a_restricted_account_cannot_sign_in_with_a_passkey(
    app: Any, client: Any, user: Any
) -> None:
    auth = Authenticator()
    add(client, auth)
    r = post(client, "/privacy/restrict", htmx=True, current_password=PASSWORD)
    assert r.status_code == 200
    refused(sign_in(client, auth), "restricted", 403)
    assert not signed_in(client)


def test_only_a_passkey_means_it_is_asked_after_the_password(
    app: Any, client: Any, user: Any
) -> None:
    auth = with_passkey(client)
    r = login(client, ADA)
    assert r.status_code == 302 and r.headers["Location"] == STEP
    assert not signed_in(client)
    page = client.get(STEP).get_data(as_text=True)
    assert 'data-testid="use-recovery"' in page and 'data-testid="use-app"' not in page
    assert "data-passkey-needs-js" in page  # without JavaScript it says so; recovery codes work
    opts = options_json(client, STEP_OPTIONS)
    assert [c["id"] for c in opts["allowCredentials"]] == [b64(auth.credentials[0].id)]
    assert opts["userVerification"] == "preferred"
    r = send(client, STEP, auth.get(opts))
    assert r.status_code == 302 and r.headers["Location"] == "/profile"
    assert signed_in(client)


def test_with_the_app_too_a_passkey_is_offered_instead(app: Any, client: Any, user: Any) -> None:
    set_up(client)
    auth = with_passkey(client)
    assert login(client, ADA).headers["Location"] == "/login/code"
    page = client.get("/login/code").get_data(as_text=True)
    assert 'href="/login/passkey-step"' in page and "Use a passkey instead" in page
    page = client.get(STEP).get_data(as_text=True)
    assert 'data-testid="use-app"' in page and 'data-testid="use-recovery"' in page
    r = send(client, STEP, auth.get(options_json(client, STEP_OPTIONS)))
    assert r.status_code == 302 and signed_in(client)


def test_without_a_passkey_none_is_offered(app: Any, client: Any, user: Any) -> None:
    set_up(client)
    sign_out(client)
    login(client, ADA)
    page = client.get("/login/code").get_data(as_text=True)
    assert "Use a passkey instead" not in page and "Use a recovery code instead" in page


def test_the_second_step_refuses_another_accounts_passkey_and_limits_tries(
    app: Any, client: Any, other_client: Any, user: Any
) -> None:
    mine = with_passkey(client)
    register(other_client, "bob@example.com")
    login(other_client, "bob@example.com")
    theirs = Authenticator()
    add(other_client, theirs)
    login(client, ADA)
    for _ in range(5):
        answer = theirs.get(options_json(client, STEP_OPTIONS), cred=theirs.credentials[0])
        refused(send(client, STEP, answer), "not registered here")
    assert not signed_in(client)
    r = send(client, STEP, mine.get({"rpId": "localhost", "challenge": "x"}))
    refused(r, "Too many attempts", 429)


def test_a_tampered_signature_or_origin_signs_nobody_in(app: Any, client: Any, user: Any) -> None:
    auth = with_passkey(client)
    answer = auth.get(options_json(client, SIGNIN_OPTIONS))
    data = bytearray(unb64(answer["response"]["authenticatorData"]))
    data[-1] ^= 0x01  # the signed counter: the signature no longer matches
    answer["response"]["authenticatorData"] = b64(bytes(data))
    refused(send(client, SIGNIN, answer), "could not be verified")
    evil = Authenticator(origin="https://evil.example", credentials=auth.credentials)
    refused(send(client, SIGNIN, evil.get(options_json(client, SIGNIN_OPTIONS))), "could not be verified")  # fmt: skip
    # The challenge in clientDataJSON changed (and the answer signed anew):
    # no challenge of this session matches it.
    opts = options_json(client, SIGNIN_OPTIONS)
    refused(send(client, SIGNIN, auth.get({**opts, "challenge": b64(b"z" * 32)})), "expired or was already used")  # fmt: skip
    assert not signed_in(client)


def test_a_challenge_works_once_in_its_own_session_within_five_minutes(
    app: Any, client: Any, other_client: Any, clock: Any, user: Any
) -> None:
    auth = with_passkey(client)
    # Another session's challenge.
    answer = auth.get(options_json(other_client, SIGNIN_OPTIONS))
    refused(send(client, SIGNIN, answer), "expired or was already used")
    # An expired one.
    answer = auth.get(options_json(client, SIGNIN_OPTIONS))
    clock.advance(301)
    refused(send(client, SIGNIN, answer), "expired or was already used")
    # A replayed one.
    answer = auth.get(options_json(client, SIGNIN_OPTIONS))
    assert send(client, SIGNIN, answer).status_code == 302
    sign_out(client)
    refused(send(client, SIGNIN, answer), "expired or was already used")
    assert not signed_in(client)
    with db.reading() as conn:  # spent and expired challenges are gone
        assert len(conn.execute(select(webauthn_challenges.c.challenge)).all()) <= 1


def test_an_unknown_passkey_signs_nobody_in(app: Any, client: Any, user: Any) -> None:
    auth = with_passkey(client)
    stranger = Authenticator()
    stranger.credentials.append(
        Credential(b"never-registered", auth.credentials[0].key, "localhost", b"h" * 32)
    )
    refused(send(client, SIGNIN, stranger.get(options_json(client, SIGNIN_OPTIONS))), "not registered here")  # fmt: skip


def test_a_sign_count_that_goes_back_is_refused(app: Any, client: Any, user: Any) -> None:
    auth = with_passkey(client)
    assert sign_in(client, auth).status_code == 302
    sign_out(client)
    auth.credentials[0].sign_count = 0  # a cloned authenticator answers with an old count
    refused(send(client, SIGNIN, auth.get(options_json(client, SIGNIN_OPTIONS))), "could not be verified")  # fmt: skip
    assert not signed_in(client)


def test_without_user_verification_a_passkey_alone_is_not_enough(
    app: Any, client: Any, user: Any
) -> None:
    auth = with_passkey(client)
    auth.verify_user = False  # presence only: no PIN, no biometrics
    refused(send(client, SIGNIN, auth.get(options_json(client, SIGNIN_OPTIONS))), "could not be verified")  # fmt: skip
    # After the password it is a second factor: presence is enough there.
    login(client, ADA)
    assert send(client, STEP, auth.get(options_json(client, STEP_OPTIONS))).status_code == 302


def test_a_wrong_user_handle_or_garbage_is_refused(app: Any, client: Any, user: Any) -> None:
    auth = with_passkey(client)
    cred = auth.credentials[0]
    cred.user_handle = b"x" * 32
    refused(send(client, SIGNIN, auth.get(options_json(client, SIGNIN_OPTIONS))), "could not be verified")  # fmt: skip
    for garbage in ("{", "[]", json.dumps({"response": {}}), "x" * 20000):
        refused(send(client, SIGNIN, garbage), "could not be verified")
    cred.user_handle = unb64(passkey_handle())
    broken: list[tuple[str, str]] = [
        ("clientDataJSON", b64(b"not json")),
        ("clientDataJSON", b64(json.dumps({"type": "webauthn.get"}).encode())),
        ("clientDataJSON", "***"),
        ("authenticatorData", b64(b"short")),
        ("signature", b64(b"not a DER signature")),
        ("userHandle", 42),  # type: ignore[list-item]
    ]
    for name, value in broken:
        answer = auth.get(options_json(client, SIGNIN_OPTIONS))
        answer["response"][name] = value
        r = send(client, SIGNIN, answer)
        assert r.status_code == 422, (name, r.status_code)
    assert not signed_in(client)
    r = post(client, SIGNIN, credential="", client_error="NotAllowedError")
    refused(r, "cancelled or timed out")
    # Unbroken, the passkey still works: nothing above changed it.
    assert sign_in(client, auth).status_code == 302
