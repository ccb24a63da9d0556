"""Signing in with the authenticator app (issue 21, point 1): the code is asked
after the password; "Use a recovery code instead"; a code used in its window
is refused, a recovery code works once; 5 failed codes per 5 minutes per
account, then 429; the pending step expires and dies with a password change."""

from __future__ import annotations

import threading
from typing import Any

import pyotp
from flask.testing import FlaskClient

from tests.support.accounts import PASSWORD, login, register
from tests.support.factors import code, next_step, set_up
from tests.support.web import csrf_token, post

ADA = "ada@example.com"


def with_app(client: FlaskClient, user: Any) -> tuple[str, list[str]]:
    secret, codes = set_up(client)
    sign_out(client)
    return secret, codes


def sign_out(client: FlaskClient) -> None:
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})


def enter(client: FlaskClient, value: str, path: str = "/login/code", token: str = "") -> Any:
    field = "code" if path == "/login/code" else "recovery_code"
    token = token or csrf_token(client, path)
    return client.post(path, data={field: value, "csrf_token": token})


def signed_in(client: FlaskClient) -> bool:
    return client.get("/profile").status_code == 200


def test_password_then_code_signs_in(app: Any, client: Any, clock: Any, user: Any) -> None:
    secret, _ = with_app(client, user)
    next_step(clock)
    r = login(client, ADA, next="/privacy")
    assert r.status_code == 302 and r.headers["Location"] == "/login/code"
    assert not signed_in(client)  # the password alone signs nobody in
    page = client.get("/login/code").get_data(as_text=True)
    assert "Enter your code" in page and 'autocomplete="one-time-code"' in page
    assert 'href="/login/recovery"' in page and "Use a recovery code instead" in page
    r = enter(client, code(secret))
    assert r.status_code == 302 and r.headers["Location"] == "/privacy"
    assert signed_in(client)


def test_wrong_code_other_secret_and_garbage_are_refused(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    secret, _ = with_app(client, user)
    next_step(clock)
    login(client, ADA)
    for value in (code(pyotp.random_base32(32)), "12 34 5", "x" * 10_000, ""):
        r = enter(client, value)
        assert r.status_code == 422, value
        assert not signed_in(client)
    assert enter(client, code(secret)).status_code == 302


def test_a_code_used_in_its_window_is_refused(app: Any, clock: Any, user: Any) -> None:
    one = app.test_client()
    login(one, ADA)
    secret, _ = set_up(one)  # the set-up spent the code of this step
    two = app.test_client()
    login(two, ADA)
    r = enter(two, code(secret))
    assert r.status_code == 422 and "used already" in r.get_data(as_text=True)
    next_step(clock)
    used = code(secret)
    assert enter(two, used).status_code == 302
    three = app.test_client()
    login(three, ADA)
    assert enter(three, used).status_code == 422  # the same code, same window: refused
    # The previous step's code too, once a later one was accepted.
    assert enter(three, code(secret, later=-30)).status_code == 422


def test_two_requests_with_the_same_code_sign_in_once(app: Any, clock: Any, user: Any) -> None:
    one = app.test_client()
    login(one, ADA)
    secret, _ = set_up(one)
    next_step(clock)
    clients = [app.test_client() for _ in range(4)]
    tokens = []
    for c in clients:
        login(c, ADA)
        tokens.append(csrf_token(c, "/login/code"))
    value, results = code(secret), []

    def go(c: FlaskClient, token: str) -> None:
        with app.app_context():
            answer = c.post("/login/code", data={"code": value, "csrf_token": token})
            results.append(answer.status_code)

    threads = [threading.Thread(target=go, args=pair) for pair in zip(clients, tokens, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [302, 422, 422, 422]


def test_recovery_code_works_once(app: Any, client: Any, clock: Any, user: Any) -> None:
    _, codes = with_app(client, user)
    login(client, ADA)
    page = client.get("/login/recovery").get_data(as_text=True)
    assert "Use your authenticator app instead" in page
    assert enter(client, codes[0].upper(), "/login/recovery").status_code == 302
    sign_out(client)
    login(client, ADA)
    r = enter(client, codes[0], "/login/recovery")  # reused
    assert r.status_code == 422 and "used already" in r.get_data(as_text=True)
    for bad in ("abcd-efgh-jkmn-pqrs", "<b>" * 30, "", "0" * 16):
        assert enter(client, bad, "/login/recovery").status_code in (422, 429)
    other = app.test_client()
    login(other, ADA)
    assert enter(other, codes[1], "/login/recovery").status_code == 302
    profile = other.get("/profile").get_data(as_text=True)
    assert "8 of 10 recovery codes left." in profile


def test_five_failed_codes_then_429_even_for_the_right_one(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    secret, codes = with_app(client, user)
    next_step(clock)
    login(client, ADA)
    wrong = "000000" if code(secret) != "000000" else "111111"
    for _ in range(5):
        assert enter(client, wrong).status_code == 422
    r = enter(client, code(secret))
    assert r.status_code == 429 and "Too many attempts" in r.get_data(as_text=True)
    assert enter(client, codes[0], "/login/recovery").status_code == 429  # same account
    assert not signed_in(client)
    # The limit is the account's: another account's codes are not affected.
    other = app.test_client()
    register(other, "bob@example.com")
    login(other, "bob@example.com")
    bob_secret, _ = set_up(other)
    sign_out(other)
    next_step(clock)
    login(other, "bob@example.com")
    assert enter(other, code(bob_secret)).status_code == 302


def test_the_code_pages_without_a_pending_sign_in_go_to_login(client: Any) -> None:
    for path in ("/login/code", "/login/recovery"):
        r = client.get(path)
        assert r.status_code == 302 and r.headers["Location"] == "/login"


def test_the_pending_step_expires(app: Any, client: Any, clock: Any, user: Any) -> None:
    secret, _ = with_app(client, user)
    login(client, ADA)
    token = csrf_token(client, "/login/code")
    clock.advance(301)
    r = enter(client, code(secret), token=token)
    assert r.status_code == 302 and r.headers["Location"] == "/login"
    assert "took too long" in client.get("/login").get_data(as_text=True)
    assert not signed_in(client)


def test_a_password_change_voids_a_pending_step(
    app: Any, client: Any, clock: Any, user: Any
) -> None:
    secret, _ = set_up(client)  # client stays signed in
    thief = app.test_client()
    login(thief, ADA)
    token = csrf_token(thief, "/login/code")
    r = post(
        client,
        "/profile/password",
        current_password=PASSWORD,
        new_password="tangerine submarine umbrella",
        confirm_password="tangerine submarine umbrella",
    )
    assert r.status_code == 200
    next_step(clock)
    r = enter(thief, code(secret), token=token)
    assert r.status_code == 302 and r.headers["Location"] == "/login"
    assert not signed_in(thief)


def test_without_a_factor_the_password_signs_in_at_once(client: Any, user: Any) -> None:
    sign_out(client)
    r = login(client, ADA)
    assert r.status_code == 302 and r.headers["Location"] == "/profile"


def test_code_pages_need_csrf(app: Any, client: Any, clock: Any, user: Any) -> None:
    secret, codes = with_app(client, user)
    next_step(clock)
    login(client, ADA)
    assert client.post("/login/code", data={"code": code(secret)}).status_code == 400
    assert client.post("/login/recovery", data={"recovery_code": codes[0]}).status_code == 400
    assert not signed_in(client)
