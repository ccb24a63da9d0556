"""Registration, sign-in and sign-out through the real pages."""

from __future__ import annotations

from typing import Any

from tests.support.accounts import PASSWORD, body, login, mails, register, user_row
from tests.support.web import csrf_token, post


def test_register_page_has_the_labelled_fields(client: Any) -> None:
    html = client.get("/register").get_data(as_text=True)
    for label in ("Email", "Password", "Confirm password"):
        assert f">{label}</label>" in html
    assert ">Create account</button>" in html


def test_login_page_has_the_labelled_fields(client: Any) -> None:
    html = client.get("/login").get_data(as_text=True)
    for label in ('for="login-email">Email', 'for="login-password">Password', "Remember me"):
        assert label in html
    assert ">Sign in</button>" in html


def test_register_creates_an_unverified_account_and_queues_the_verification_mail(
    app: Any, client: Any, work: Any
) -> None:
    resp = register(client, "  Ada@Example.COM ")
    assert resp.status_code == 200
    assert "We have sent a message to ada@example.com" in resp.get_data(as_text=True)
    row = user_row("ada@example.com")
    assert row is not None and not row.email_verified
    work()
    sent = mails(app)
    assert [m["To"] for m in sent] == ["ada@example.com"]
    assert "/verify-email/" in body(sent[0])


def test_register_rejects_mismatch_invalid_address_and_policy(client: Any) -> None:
    r = post(
        client, "/register", email="ada@example.com", password=PASSWORD, confirm=PASSWORD + "x"
    )
    assert r.status_code == 422 and "The passwords do not match." in r.get_data(as_text=True)
    r = register(client, "not-an-address")
    assert r.status_code == 422 and "Enter a valid email address." in r.get_data(as_text=True)
    r = register(client, "ada@example.com", "short")
    assert r.status_code == 422 and "at least 15 characters" in r.get_data(as_text=True)
    assert user_row("ada@example.com") is None


def test_registration_does_not_reveal_existing_accounts(app: Any, client: Any, work: Any) -> None:
    first = register(client, "ada@example.com")
    work()
    second = register(client, "ada@example.com", "another long passphrase here")
    assert second.status_code == first.status_code == 200
    assert _main(second) == _main(first)
    work()
    sent = mails(app)
    # The owner hears about the attempt; the password did not change.
    assert sent[-1]["To"] == "ada@example.com"
    assert "already have an account" in body(sent[-1])
    assert login(client, "ada@example.com").status_code == 302


def _main(resp: Any) -> str:
    html = resp.get_data(as_text=True)
    return html[html.index("<main") : html.index("</main>")]


def test_sign_in_failure_does_not_reveal_whether_the_account_exists(client: Any) -> None:
    register(client, "ada@example.com")
    wrong_password = login(client, "ada@example.com", "wrong password entirely")
    unknown = login(client, "nobody@example.com", "wrong password entirely")
    assert wrong_password.status_code == unknown.status_code == 422
    msg = "The email address or password is not correct."
    assert msg in wrong_password.get_data(as_text=True)
    assert msg in unknown.get_data(as_text=True)


def test_signed_out_profile_redirects_to_login_with_next(client: Any) -> None:
    resp = client.get("/profile")
    assert resp.status_code == 302
    assert resp.headers["Location"] == "/login?next=/profile"


def test_sign_in_follows_a_local_next_only(client: Any) -> None:
    register(client, "ada@example.com")
    token = csrf_token(client)
    r = client.post(
        "/login?next=//evil.example/x",
        data={"csrf_token": token, "email": "ada@example.com", "password": PASSWORD},
    )
    assert r.headers["Location"] == "/profile"
    client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    r = client.post(
        "/login?next=/profile",
        data={"csrf_token": csrf_token(client), "email": "ada@example.com", "password": PASSWORD},
    )
    assert r.headers["Location"] == "/profile"


def test_sign_in_starts_a_new_session(client: Any) -> None:
    register(client, "ada@example.com")
    csrf_token(client)
    with client.session_transaction() as s:
        s["planted"] = "by an attacker"
        before = dict(s)
    login(client, "ada@example.com")
    with client.session_transaction() as s:
        assert "planted" not in s
        assert s.get("_user_id") and s.get("_user_id") != before.get("_user_id")
        assert s.get("csrf_token") != before.get("csrf_token")


def test_logout_is_post_only_and_ends_the_session(client: Any) -> None:
    register(client, "ada@example.com")
    login(client, "ada@example.com")
    assert client.get("/logout").status_code == 405
    assert client.get("/profile").status_code == 200
    r = client.post("/logout", data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 302
    assert client.get("/profile").status_code == 302
    assert "You have been signed out." in client.get("/login").get_data(as_text=True)


def test_remember_me_sets_a_long_lived_httponly_cookie(client: Any) -> None:
    register(client, "ada@example.com")
    r = login(client, "ada@example.com", remember="on")
    cookies = r.headers.getlist("Set-Cookie")
    remember = [c for c in cookies if c.startswith("remember_token=")]
    assert remember and "HttpOnly" in remember[0] and "SameSite=Lax" in remember[0]
