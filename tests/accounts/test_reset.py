""" "Forgot password?": a neutral request page, a single-use link
valid 1 hour and bound to the password hash and to the latest request, a
reset that ends every session and mails a notice; the revert page of an email
change offers the same step."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from tests.support.accounts import (
    NEW_PASSWORD,
    PASSWORD,
    body,
    link_in,
    login,
    mails,
    register,
    user_row,
)
from tests.support.web import csrf_token, post

NEUTRAL = "If an account exists for that address, we have sent a link to reset the password."
INVALID = "This link is invalid or has expired."
OTHER_PASSWORD = "marmalade lighthouse pancake"


def _ask(client: Any, address: str, htmx: bool = False) -> Any:
    return post(client, "/reset-password", htmx=htmx, email=address)


def _reset_links(app: Any, to: str = "ada@example.com") -> list[str]:
    return [
        link_in(m, "/reset-password/")
        for m in mails(app)
        if m["To"] == to and "/reset-password/" in body(m) and "Reset" in str(m["Subject"])
    ]


def _set(
    client: Any, link: str, new: str = NEW_PASSWORD, confirm: str | None = None, **kw: Any
) -> Any:
    headers = {"HX-Request": "true"} if kw.get("htmx") else {}
    data = {
        "csrf_token": csrf_token(client),
        "new_password": new,
        "confirm_password": new if confirm is None else confirm,
    }
    return client.post(link, data=data, headers=headers)


def test_login_page_links_to_the_reset_page(client: Any) -> None:
    html = client.get("/login").get_data(as_text=True)
    assert 'href="/reset-password"' in html and "Forgot password?" in html
    page = client.get("/reset-password")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert '<label for="reset-email">Email</label>' in html and "Send reset link" in html
    assert 'hx-post="/reset-password"' in html and 'method="post"' in html


def test_the_answer_is_the_same_for_known_and_unknown_addresses(
    app: Any, client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    known = _ask(client, "ada@example.com")
    unknown = _ask(client, "nobody@example.com")
    assert known.status_code == unknown.status_code == 200
    assert NEUTRAL in known.get_data(as_text=True) and NEUTRAL in unknown.get_data(as_text=True)
    work()
    assert len(_reset_links(app)) == 1
    assert not [m for m in mails(app) if m["To"] == "nobody@example.com"]


def test_reset_end_to_end_ends_every_session_and_mails_a_notice(
    app: Any, client: Any, other_client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    login(other_client, "ada@example.com")  # a session elsewhere (an attacker's?)
    assert other_client.get("/profile").status_code == 200
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    page = client.get(link).get_data(as_text=True)
    assert "New password" in page and "Confirm new password" in page and "Set new password" in page
    r = _set(client, link, NEW_PASSWORD, NEW_PASSWORD + "x")
    assert r.status_code == 422 and "The new passwords do not match." in r.get_data(as_text=True)
    r = _set(client, link, "short")
    assert r.status_code == 422 and "at least 15 characters" in r.get_data(as_text=True)
    r = _set(client, link)
    assert r.status_code == 303 and r.headers["Location"].endswith("/login")
    assert "Your password has been reset. Please sign in." in client.get("/login").get_data(
        as_text=True
    )
    assert other_client.get("/profile").status_code == 302  # signed out everywhere
    assert login(client, "ada@example.com", PASSWORD).status_code == 422
    assert login(client, "ada@example.com", NEW_PASSWORD).status_code == 302
    work()
    assert any("Your password was changed" in str(m["Subject"]) for m in mails(app))
    assert user_row("ada@example.com").email_verified  # the link proved the address
    again = _set(app.test_client(), link, OTHER_PASSWORD)
    assert again.status_code == 400 and INVALID in again.get_data(as_text=True)


def test_with_htmx_the_answers_are_fragments_and_success_redirects(
    app: Any, client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    r = _ask(client, "ada@example.com", htmx=True)
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and html.lstrip().startswith('<section id="reset-request"')
    assert NEUTRAL in html and "HX-Request" in r.headers["Vary"]
    work()
    (link,) = _reset_links(app)
    r = _set(client, link, "short", htmx=True)
    assert r.status_code == 422
    assert r.get_data(as_text=True).lstrip().startswith('<section id="reset-password"')
    r = _set(client, link, htmx=True)
    assert r.status_code == 200 and r.headers["HX-Redirect"] == "/login"


def test_the_link_expires_after_an_hour(app: Any, client: Any, work: Any, clock: Any) -> None:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    clock.advance(timedelta(minutes=61))
    r = client.get(link)
    assert r.status_code == 400 and INVALID in r.get_data(as_text=True)
    assert _set(client, link).status_code == 400
    assert login(client, "ada@example.com", PASSWORD).status_code == 302


def test_a_second_request_voids_the_first_link(
    app: Any, client: Any, work: Any, clock: Any
) -> None:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    clock.advance(2)
    _ask(client, "ada@example.com")
    work()
    first, second = _reset_links(app)
    assert client.get(first).status_code == 400
    assert client.get(second).status_code == 200


def test_a_changed_password_voids_the_link(app: Any, client: Any, work: Any) -> None:
    register(client, "ada@example.com")
    _ask(client, "ada@example.com")
    work()
    (link,) = _reset_links(app)
    login(client, "ada@example.com")
    post(
        client,
        "/profile/password",
        current_password=PASSWORD,
        new_password=OTHER_PASSWORD,
        confirm_password=OTHER_PASSWORD,
    )
    r = app.test_client().get(link)
    assert r.status_code == 400 and INVALID in r.get_data(as_text=True)


def test_altered_links_are_invalid(client: Any) -> None:
    r = client.get("/reset-password/not-a-token")
    assert r.status_code == 400 and INVALID in r.get_data(as_text=True)
    assert "Request a new link" in r.get_data(as_text=True)


def test_requests_are_limited_per_address_and_per_client(app: Any, client: Any, work: Any) -> None:
    register(client, "ada@example.com")
    answers = [_ask(client, "ada@example.com") for _ in range(5)]
    assert all(r.status_code == 200 and NEUTRAL in r.get_data(as_text=True) for r in answers)
    work()
    assert len(_reset_links(app)) == 3  # 3 an hour per address, silently
    codes = [_ask(client, f"user{i}@example.com").status_code for i in range(20)]
    assert codes[:15] == [200] * 15 and codes[-1] == 429


def test_revert_offers_a_new_password_so_a_takeover_is_undone(
    app: Any, client: Any, other_client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    # The attacker, signed in as Ada, changes her address and her password.
    login(other_client, "ada@example.com")
    post(
        other_client,
        "/profile/password",
        current_password=PASSWORD,
        new_password=OTHER_PASSWORD,
        confirm_password=OTHER_PASSWORD,
    )
    post(
        other_client,
        "/profile/email",
        new_email="mallory@example.com",
        current_password=OTHER_PASSWORD,
    )
    work()
    (revert,) = [
        link_in(m, "/email-change/revert/")
        for m in mails(app)
        if m["To"] == "ada@example.com" and "/email-change/revert/" in body(m)
    ]
    r = client.post(revert, data={"csrf_token": csrf_token(client)})
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and "Set new password" in html and "New password" in html
    action = re.search(r'action="(/reset-password/[^"]+)"', html).group(1)  # type: ignore[union-attr]
    assert _set(client, action).status_code == 303
    assert other_client.get("/profile").status_code == 302
    assert login(client, "ada@example.com", OTHER_PASSWORD).status_code == 422
    assert login(client, "ada@example.com", NEW_PASSWORD).status_code == 302


def test_german_texts(app: Any, client: Any) -> None:
    de = {"Accept-Language": "de"}
    html = client.get("/login", headers=de).get_data(as_text=True)
    assert "Passwort vergessen?" in html
    html = client.get("/reset-password", headers=de).get_data(as_text=True)
    assert "Link zum Zurücksetzen senden" in html
    html = client.get("/reset-password/x", headers=de).get_data(as_text=True)
    assert "Dieser Link ist ungültig oder abgelaufen." in html
