"""Passkeys in the profile (issue 21, point 2): "Add a passkey" with a name
the user chooses (required, at most 64 characters, trimmed), the list with
each one's name, when it was added and when it was last used, "Remove", both
only with a fresh proof of identity, and "Confirm it's you" with a passkey.
The first second factor brings recovery codes; they stay while any factor
does. Hostile answers (wrong origin, another session's or a spent
challenge, a passkey of another account, a bad signature) change nothing."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from tests.support.accounts import PASSWORD, login, register, user_row
from tests.support.authenticator import Authenticator
from tests.support.factors import code, codes_on, next_step, set_up
from tests.support.passkeys import (
    ADD,
    ADD_OPTIONS,
    REAUTH,
    REAUTH_OPTIONS,
    REMOVE,
    add,
    options,
    options_json,
    send,
)
from tests.support.web import post
from webapp.accounts.factors.passkeys import b64, unb64
from webapp.accounts.factors.tables import PASSKEY, recovery_codes, user_factors
from webapp.core import db

STALE = 301  # seconds: past REAUTH_SECONDS (300)


def passkey_rows() -> list[Any]:
    with db.reading() as conn:
        return conn.execute(select(user_factors).where(user_factors.c.kind == PASSKEY)).all()


def code_rows() -> int:
    with db.reading() as conn:
        return len(conn.execute(select(recovery_codes.c.number)).all())


def factor_id(name: str) -> str:
    return next(r.id for r in passkey_rows() if r.name == name)


def test_adding_a_passkey_lists_it_and_makes_recovery_codes(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    r = add(client, Authenticator(), "Laptop")
    page = r.get_data(as_text=True)
    assert r.status_code == 200, page[:800]
    assert "Passkey “Laptop” added." in page
    assert 'data-testid="passkey-name">Laptop<' in page and "Not used yet" in page
    assert len(codes_on(page)) == 10  # the first second factor: codes, shown once
    (row,) = passkey_rows()
    assert row.sign_count == 0 and row.transports == "hybrid internal"
    assert row.public_key and row.credential_id and row.secret == ""
    # The user handle is opaque: neither the address nor the user id.
    handle = unb64(row.user_handle)
    assert len(handle) == 32 and user.id.encode() not in handle and b"ada" not in handle
    assert user_row("ada@example.com").recovery_codes_left == 10
    # A second passkey gets the same handle, and no new codes.
    clock.advance(1)
    r = add(client, Authenticator(), "Phone")
    assert r.status_code == 200 and not codes_on(r.get_data(as_text=True))
    assert {x.user_handle for x in passkey_rows()} == {row.user_handle}
    page = client.get("/profile").get_data(as_text=True)
    assert page.index(">Laptop<") < page.index(">Phone<")


def test_the_options_exclude_the_accounts_passkeys_and_want_a_resident_key(
    app: Any, client: Any, user: Any
) -> None:
    add(client, Authenticator(), "Laptop")
    opts = options_json(client, ADD_OPTIONS, name="Phone")
    assert opts["rp"]["id"] == "localhost" and opts["user"]["name"] == "ada@example.com"
    assert opts["authenticatorSelection"]["residentKey"] == "required"
    assert opts["attestation"] == "none"
    assert [c["id"] for c in opts["excludeCredentials"]] == [passkey_rows()[0].credential_id]


def test_the_name_is_required_trimmed_and_limited(app: Any, client: Any, user: Any) -> None:
    auth = Authenticator()
    answer = auth.create(options_json(client, ADD_OPTIONS, name="ok"))
    r = send(client, ADD, answer, htmx=True, name="   ")
    assert r.status_code == 422 and "Enter a name for the passkey." in r.get_data(as_text=True)
    long = "x" * 65
    assert options(client, ADD_OPTIONS, name=long).status_code == 422
    r = send(client, ADD, answer, htmx=True, name=long)
    assert r.status_code == 422
    assert "must be 64 characters or fewer" in r.get_data(as_text=True)
    r = send(client, ADD, answer, htmx=True, name="bad\x07name")
    assert r.status_code == 422 and "control characters" in r.get_data(as_text=True)
    assert passkey_rows() == []
    # The answer was not spent by the refused submits: with a good name it counts.
    r = send(client, ADD, answer, htmx=True, name="  Work laptop  ")
    assert r.status_code == 200
    assert [x.name for x in passkey_rows()] == ["Work laptop"]


def test_no_answer_from_the_browser_says_so(app: Any, client: Any, user: Any) -> None:
    r = post(client, ADD, htmx=True, name="Laptop", credential="", client_error="NotAllowedError")
    assert r.status_code == 422 and "cancelled or timed out" in r.get_data(as_text=True)
    # The authenticator holds one of the account's passkeys already.
    r = post(client, ADD, htmx=True, name="Laptop", credential="", client_error="InvalidStateError")
    assert r.status_code == 422 and "already registered" in r.get_data(as_text=True)


def test_adding_and_removing_need_a_fresh_proof(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    add(client, Authenticator(), "Laptop")
    clock.advance(STALE)
    assert options(client, ADD_OPTIONS, name="Phone").status_code == 403
    r = post(client, ADD, htmx=True, name="Phone", credential="{}")
    assert r.status_code == 403 and 'data-testid="reauth"' in r.get_data(as_text=True)
    r = post(client, REMOVE, htmx=True, passkey=factor_id("Laptop"))
    assert r.status_code == 403
    page = client.get("/profile").get_data(as_text=True)
    assert 'data-testid="passkey-remove"' not in page  # offered only with a fresh proof
    assert 'data-testid="reauth-passkey"' in page  # ... which a passkey can give
    assert len(passkey_rows()) == 1


def test_confirm_its_you_with_a_passkey_then_remove_it(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    auth = Authenticator()
    add(client, auth, "Laptop")
    clock.advance(STALE)
    answer = auth.get(options_json(client, REAUTH_OPTIONS))
    r = send(client, REAUTH, answer, htmx=True)
    assert r.status_code == 200 and 'data-testid="passkey-remove"' in r.get_data(as_text=True)
    (row,) = passkey_rows()
    assert row.sign_count == 1 and row.last_used_at is not None
    assert "Not used yet" not in client.get("/profile").get_data(as_text=True)
    r = post(client, REMOVE, htmx=True, passkey=row.id)
    assert r.status_code == 200 and "Passkey “Laptop” removed." in r.get_data(as_text=True)
    assert passkey_rows() == []
    # It was the only factor: its recovery codes went with it.
    assert code_rows() == 0 and user_row("ada@example.com").recovery_codes_left == 0
    r = post(client, REMOVE, htmx=True, passkey=row.id)
    assert r.status_code == 422 and "already removed" in r.get_data(as_text=True)


def test_recovery_codes_stay_while_any_factor_does(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    secret, _codes = set_up(client)
    r = add(client, Authenticator(), "Laptop")
    assert r.status_code == 200 and not codes_on(r.get_data(as_text=True))
    next_step(clock)
    r = post(client, "/profile/factors/totp/off", htmx=True, current_password=PASSWORD,
             code=code(secret))  # fmt: skip
    assert r.status_code == 200
    assert code_rows() == 10 and user_row("ada@example.com").recovery_codes_left == 10
    assert user_row("ada@example.com").totp_since is None
    post(client, REMOVE, htmx=True, passkey=factor_id("Laptop"))
    assert code_rows() == 0 and user_row("ada@example.com").recovery_codes_left == 0


def tamper_origin(answer: dict[str, Any], origin: str) -> dict[str, Any]:
    data = json.loads(unb64(answer["response"]["clientDataJSON"]))
    data["origin"] = origin
    answer["response"]["clientDataJSON"] = b64(json.dumps(data).encode())
    return answer


def test_a_registration_from_another_origin_is_refused(app: Any, client: Any, user: Any) -> None:
    answer = Authenticator(origin="https://evil.example").create(
        options_json(client, ADD_OPTIONS, name="Laptop")
    )
    r = send(client, ADD, answer, htmx=True, name="Laptop")
    assert r.status_code == 422 and "could not be verified" in r.get_data(as_text=True)
    assert passkey_rows() == []


def test_a_malformed_registration_answer_is_refused(app: Any, client: Any, user: Any) -> None:
    auth = Authenticator()
    for name, value in (
        ("attestationObject", b64(b"not cbor at all")),
        ("attestationObject", "***"),
        ("clientDataJSON", b64(b"[]")),
    ):
        answer = auth.create(options_json(client, ADD_OPTIONS, name="Laptop"))
        answer["response"][name] = value
        r = send(client, ADD, answer, htmx=True, name="Laptop")
        assert r.status_code == 422, (name, r.status_code)
    assert passkey_rows() == []


def test_a_registration_answer_works_once_and_only_in_its_session(
    app: Any, client: Any, other_client: Any, user: Any
) -> None:
    # Another signed-in session of the same account cannot use this one's challenge.
    login(other_client, "ada@example.com")
    answer = Authenticator().create(options_json(client, ADD_OPTIONS, name="Laptop"))
    r = send(other_client, ADD, answer, htmx=True, name="Laptop")
    assert r.status_code == 422 and "expired or was already used" in r.get_data(as_text=True)
    assert send(client, ADD, answer, htmx=True, name="Laptop").status_code == 200
    r = send(client, ADD, answer, htmx=True, name="Again")  # replayed
    assert r.status_code == 422 and "expired or was already used" in r.get_data(as_text=True)
    assert len(passkey_rows()) == 1


def test_confirm_its_you_refuses_another_accounts_passkey_and_a_bad_signature(
    app: Any, client: Any, other_client: Any, clock: Any, user: Any
) -> None:
    mine, theirs = Authenticator(), Authenticator()
    add(client, mine, "Laptop")
    register(other_client, "bob@example.com")
    login(other_client, "bob@example.com")
    add(other_client, theirs, "Bob's")
    clock.advance(STALE)
    answer = theirs.get(options_json(client, REAUTH_OPTIONS), cred=theirs.credentials[0])
    r = send(client, REAUTH, answer, htmx=True)
    assert r.status_code == 422 and "not registered here" in r.get_data(as_text=True)
    answer = mine.get(options_json(client, REAUTH_OPTIONS))
    sig = bytearray(unb64(answer["response"]["signature"]))
    sig[-1] ^= 0x01
    answer["response"]["signature"] = b64(bytes(sig))
    r = send(client, REAUTH, answer, htmx=True)
    assert r.status_code == 422 and "could not be verified" in r.get_data(as_text=True)
    r = post(client, REMOVE, htmx=True, passkey=factor_id("Laptop"))
    assert r.status_code == 403  # still no fresh proof


def test_a_passkey_only_account_sees_its_recovery_codes_and_makes_new_ones(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    # Issue 34: the count and "Generate new codes" showed only with the app on.
    old = codes_on(add(client, Authenticator(), "Laptop").get_data(as_text=True))
    assert len(old) == 10
    page = client.get("/profile").get_data(as_text=True)
    assert "10 of 10 recovery codes left." in page
    assert 'data-testid="new-codes"' in page and "Generate new codes" in page
    r = post(client, "/profile/factors/recovery-codes", htmx=True)
    assert r.status_code == 200 and "The old ones no longer work" in r.get_data(as_text=True)
    new = codes_on(r.get_data(as_text=True))
    assert len(new) == 10 and not set(new) & set(old)
    assert "10 of 10 recovery codes left." in r.get_data(as_text=True)
    # With a stale proof the count stays and the action waits for "Confirm it's you".
    clock.advance(STALE)
    page = client.get("/profile").get_data(as_text=True)
    assert "10 of 10 recovery codes left." in page and 'data-testid="new-codes"' not in page
