"""The authenticator app in the profile (issue 21, point 1): set-up by QR code
or key, confirmed by one code, 10 recovery codes shown once (and as .txt),
"Generate new codes", turning it off with the password and a code; the secret
sealed with the user's key; hostile input refused with the form's errors."""

from __future__ import annotations

from typing import Any

import pyotp
from sqlalchemy import select

from tests.support.accounts import PASSWORD
from tests.support.factors import code, codes_on, next_step, secret_on, set_up, start
from tests.support.web import csrf_token, post
from webapp.accounts import crypto
from webapp.accounts.factors.tables import recovery_codes, user_factors
from webapp.core import db
from webapp.eventstore.tables import events


def section(r: Any) -> str:
    return str(r.get_data(as_text=True))


def test_set_up_shows_qr_and_key_and_one_code_confirms_it(
    client: Any, clock: Any, user: Any
) -> None:
    page = section(post(client, "/profile/factors/totp/start", htmx=True))
    assert 'src="data:image/svg+xml' in page and 'data-testid="totp-qr"' in page
    assert "alt=" in page.partition('data-testid="totp-qr"')[0].rpartition("<img")[2]
    secret = secret_on(page)
    assert len(secret) == 32
    r = post(client, "/profile/factors/totp/confirm", htmx=True, code=code(secret))
    assert r.status_code == 200
    text = section(r)
    assert "Authenticator app added" in text
    codes = codes_on(text)
    assert len(codes) == 10 and len(set(codes)) == 10
    # Shown once: the next render of the profile has no codes, says "On".
    again = client.get("/profile").get_data(as_text=True)
    assert not codes_on(again) and codes[0] not in again
    assert "On since" in again and "10 of 10 recovery codes left." in again


def test_secret_is_sealed_in_event_and_table_and_codes_only_hashed(
    client: Any, clock: Any, user: Any
) -> None:
    secret, codes = set_up(client)
    with db.reading() as conn:
        stored = conn.execute(select(user_factors.c.secret)).scalar_one()
        payloads = [str(p) for p in conn.execute(select(events.c.payload)).scalars()]
        hashes = list(conn.execute(select(recovery_codes.c.code_hash)).scalars())
        assert stored.startswith(crypto.PREFIX) and secret not in stored
        assert crypto.unseal_for(conn, user.tenant_id, user.id, stored) == secret
    assert not any(secret in p for p in payloads)
    assert len(hashes) == 10 and all(h.startswith("$argon2id$") for h in hashes)
    for c in codes:
        bare = c.replace("-", "")
        assert not any(bare in p or c in p for p in payloads)
        assert not any(bare in h for h in hashes)


def test_wrong_code_and_code_from_another_secret_are_refused(
    client: Any, clock: Any, user: Any
) -> None:
    secret = start(client)
    other = pyotp.random_base32(32)
    for wrong in (code(other), "000000" if code(secret) != "000000" else "111111"):
        r = post(client, "/profile/factors/totp/confirm", htmx=True, code=wrong)
        assert r.status_code == 422
        assert "That code is not right" in section(r)
        assert secret_on(section(r)) == secret  # the set-up is shown again
    r = post(client, "/profile/factors/totp/confirm", htmx=True, code=code(secret))
    assert r.status_code == 200


def test_garbage_overlong_and_missing_codes_get_the_forms_errors(
    client: Any, clock: Any, user: Any
) -> None:
    start(client)
    for value, message in (
        ("", "Enter the code from your authenticator app."),
        ("12345", "Enter the 6-digit code"),
        ("abcdef", "Enter the 6-digit code"),
        ("1" * 5000, "Enter the 6-digit code"),
        ("١٢٣٤٥٦", "Enter the 6-digit code"),  # Arabic-Indic digits are no code
    ):
        r = post(client, "/profile/factors/totp/confirm", htmx=True, code=value)
        assert r.status_code == 422, value
        assert message in section(r) and 'aria-invalid="true"' in section(r)
    r = post(client, "/profile/factors/totp/confirm", htmx=True)  # no field at all
    assert r.status_code == 422


def test_forms_need_csrf(client: Any, user: Any) -> None:
    for path in (
        "/profile/factors/totp/start",
        "/profile/factors/totp/confirm",
        "/profile/factors/totp/off",
        "/profile/factors/recovery-codes",
        "/profile/factors/recovery-codes.txt",
        "/profile/factors/confirm-identity",
    ):
        assert client.post(path, data={"code": "123456"}).status_code == 400, path
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is None


def test_signed_out_cannot_reach_the_section(app: Any) -> None:
    c = app.test_client()
    r = c.post("/profile/factors/totp/start", data={"csrf_token": csrf_token(c, "/login")})
    assert r.status_code == 302 and "/login" in r.headers["Location"]


def test_download_gives_the_codes_as_txt_and_refuses_anything_else(
    client: Any, clock: Any, user: Any
) -> None:
    _, codes = set_up(client)
    token_page = "/profile"
    r = client.post(
        "/profile/factors/recovery-codes.txt",
        data={"code": codes, "csrf_token": csrf_token(client, token_page)},
    )
    assert r.status_code == 200 and r.mimetype == "text/plain"
    assert 'filename="recovery-codes.txt"' in r.headers["Content-Disposition"]
    assert r.get_data(as_text=True).splitlines()[2:] == codes
    for bad in (codes[:9], [*codes, codes[0]], ["<script>", *codes[1:]]):
        r = client.post(
            "/profile/factors/recovery-codes.txt",
            data={"code": bad, "csrf_token": csrf_token(client, token_page)},
        )
        assert r.status_code == 422 and "<script>" not in r.get_data(as_text=True)


def test_generate_new_codes_voids_the_old_ones(client: Any, clock: Any, user: Any) -> None:
    _, old = set_up(client)
    r = post(client, "/profile/factors/recovery-codes", htmx=True)
    assert r.status_code == 200 and "The old ones no longer work" in section(r)
    new = codes_on(section(r))
    assert len(new) == 10 and not set(new) & set(old)
    with db.reading() as conn:
        assert len(conn.execute(select(recovery_codes.c.batch).distinct()).scalars().all()) == 1


def test_a_second_set_up_is_refused_while_one_is_on(client: Any, clock: Any, user: Any) -> None:
    set_up(client)
    r = post(client, "/profile/factors/totp/start", htmx=True)
    assert r.status_code == 422 and "already set up" in section(r)


def test_turning_off_needs_the_password_and_a_code(client: Any, clock: Any, user: Any) -> None:
    secret, codes = set_up(client)
    next_step(clock)

    def off(password: str, value: str) -> Any:
        return post(
            client, "/profile/factors/totp/off", htmx=True, current_password=password, code=value
        )

    r = off("not my password at all", code(secret))
    assert r.status_code == 422 and "The current password is not correct." in section(r)
    r = off(PASSWORD, code(pyotp.random_base32(32)))
    assert r.status_code == 422 and "That code is not right" in section(r)
    r = post(client, "/profile/factors/totp/off", htmx=True, current_password=PASSWORD)
    assert r.status_code == 422 and "Enter the code from your authenticator app." in section(r)
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is not None
    r = off(PASSWORD, code(secret))
    assert r.status_code == 200 and "Authenticator app turned off." in section(r)
    with db.reading() as conn:  # the codes went with the only factor
        assert conn.execute(select(user_factors.c.id)).first() is None
        assert conn.execute(select(recovery_codes.c.batch)).first() is None
    assert "Set up authenticator app" in section(r)


def test_turning_off_with_a_recovery_code(client: Any, clock: Any, user: Any) -> None:
    _, codes = set_up(client)
    r = post(
        client, "/profile/factors/totp/off", htmx=True, current_password=PASSWORD, code=codes[3]
    )
    assert r.status_code == 200 and "Authenticator app turned off." in section(r)
