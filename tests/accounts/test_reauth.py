"""Re-authentication freshness (issue 21, point 3): adding a factor and
showing or replacing recovery codes need a proof of identity (the password or
a code) within REAUTH_SECONDS; a stale one makes the section ask "Confirm
it's you" (403), in the htmx pattern, and the action works once it is given."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from tests.support.accounts import PASSWORD, login
from tests.support.factors import code, next_step, set_up
from tests.support.web import csrf_token, post
from webapp.accounts.factors.tables import user_factors
from webapp.core import db

REAUTH = 'data-testid="reauth"'  # the "Confirm it's you" form
STALE = 301  # seconds: past the default REAUTH_SECONDS (300)


def text(r: Any) -> str:
    return str(r.get_data(as_text=True))


def confirm(client: Any, **fields: str) -> Any:
    return post(client, "/profile/factors/confirm-identity", htmx=True, **fields)


def test_the_sign_in_is_a_fresh_proof_for_five_minutes(client: Any, clock: Any, user: Any) -> None:
    page = client.get("/profile").get_data(as_text=True)
    assert "Set up authenticator app" in page and REAUTH not in page
    clock.advance(300)
    assert "Set up authenticator app" in client.get("/profile").get_data(as_text=True)
    clock.advance(1)
    page = client.get("/profile").get_data(as_text=True)
    assert REAUTH in page and "Set up authenticator app" not in page


def test_a_stale_proof_refuses_the_action_and_the_password_renews_it(
    client: Any, clock: Any, user: Any
) -> None:
    clock.advance(STALE)
    r = post(client, "/profile/factors/totp/start", htmx=True)
    assert r.status_code == 403
    assert 'id="profile-factors"' in text(r) and "first: enter your password or a code." in text(r)
    with db.reading() as conn:
        assert conn.execute(select(user_factors.c.id)).first() is None  # nothing started
    r = confirm(client, password="not my password at all")
    assert r.status_code == 422 and "The current password is not correct." in text(r)
    r = confirm(client)
    assert r.status_code == 422 and "Enter your password or a code" in text(r)
    r = confirm(client, password=PASSWORD)
    assert r.status_code == 200 and "Set up authenticator app" in text(r)
    assert post(client, "/profile/factors/totp/start", htmx=True).status_code == 200


def test_without_javascript_the_page_comes_back_whole(client: Any, clock: Any, user: Any) -> None:
    clock.advance(STALE)
    r = post(client, "/profile/factors/totp/start")
    assert r.status_code == 403 and "<html" in text(r) and "Change password" in text(r)
    r = post(client, "/profile/factors/confirm-identity", password=PASSWORD)
    assert r.status_code == 200 and "<html" in text(r) and "Set up authenticator app" in text(r)


def test_a_code_is_a_proof_too_once(app: Any, client: Any, clock: Any, user: Any) -> None:
    secret, _ = set_up(client)
    elsewhere = app.test_client()
    login(elsewhere, "ada@example.com")
    next_step(clock)
    token = csrf_token(elsewhere, "/login/code")
    assert post(elsewhere, "/login/code", code=code(secret), csrf_token=token).status_code == 302
    next_step(clock)
    clock.advance(STALE)
    r = post(client, "/profile/factors/recovery-codes", htmx=True)
    assert r.status_code == 403
    assert 'id="profile-reauth-code"' in text(r)  # a code is offered: the app is on
    for bad in ("12345", "x" * 1000):
        assert confirm(client, code=bad).status_code == 422
    used = code(secret)
    assert confirm(client, code=used).status_code == 200
    assert post(client, "/profile/factors/recovery-codes", htmx=True).status_code == 200
    # The same code in another stale session, in its window: refused.
    r = confirm(elsewhere, code=used)
    assert r.status_code == 422 and "used already" in text(r)


def test_failed_codes_count_against_the_second_factor_limit(
    client: Any, clock: Any, user: Any
) -> None:
    secret, _ = set_up(client)
    clock.advance(STALE)
    wrong = "000000" if code(secret) != "000000" else "111111"
    for _ in range(5):
        assert confirm(client, code=wrong).status_code == 422
    r = confirm(client, code=code(secret))
    assert r.status_code == 429 and "Too many attempts" in text(r)
