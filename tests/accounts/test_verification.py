"""Verification and revert links: signed, expiring, single-use, bound."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.support.accounts import PASSWORD, link_in, login, mails, user_row
from tests.support.web import csrf_token, post


def _verify_link(app: Any, work: Any, to: str) -> str:
    work()
    sent = [
        m
        for m in mails(app)
        if m["To"] == to and "/verify-email/" in str(m.get_body().get_content())
    ]
    assert sent, f"no verification mail to {to}"
    return link_in(sent[-1], "/verify-email/")


def test_verification_link_verifies_once(app: Any, client: Any, user: Any, work: Any) -> None:
    link = _verify_link(app, work, "ada@example.com")
    page = client.get(link)
    assert page.status_code == 200 and "Verify email address" in page.get_data(as_text=True)
    assert not user_row("ada@example.com").email_verified  # GET changes nothing
    r = client.post(link, data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 200 and "Your email address has been verified." in r.get_data(
        as_text=True
    )
    assert user_row("ada@example.com").email_verified
    assert "Verified" in client.get("/profile").get_data(as_text=True)
    again = client.get(link)
    assert again.status_code == 400 and "already been used" in again.get_data(as_text=True)
    r = client.post(link, data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 400


def test_expired_link_changes_nothing(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    link = _verify_link(app, work, "ada@example.com")
    clock.advance(timedelta(hours=48, seconds=1))
    r = client.post(link, data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 400 and "This link has expired." in r.get_data(as_text=True)
    assert not user_row("ada@example.com").email_verified


def test_tampered_link_changes_nothing(app: Any, client: Any, user: Any, work: Any) -> None:
    link = _verify_link(app, work, "ada@example.com")
    r = client.post(link[:-3] + "AAA", data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 400 and "This link is not valid." in r.get_data(as_text=True)
    assert not user_row("ada@example.com").email_verified


def test_link_is_bound_to_the_address(app: Any, client: Any, user: Any, work: Any) -> None:
    old_link = _verify_link(app, work, "ada@example.com")
    post(
        client, "/profile/email", htmx=True, new_email="ada2@example.com", current_password=PASSWORD
    )
    r = client.post(old_link, data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 400
    assert not user_row("ada2@example.com").email_verified
    new_link = _verify_link(app, work, "ada2@example.com")
    r = client.post(new_link, data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 200 and user_row("ada2@example.com").email_verified


def test_revert_link_restores_the_old_address_and_ends_sessions(
    app: Any, client: Any, other_client: Any, user: Any, work: Any, clock: Any
) -> None:
    post(
        client, "/profile/email", htmx=True, new_email="typo@example.com", current_password=PASSWORD
    )
    work()
    notice = [
        m
        for m in mails(app)
        if m["To"] == "ada@example.com"
        and "/email-change/revert/" in str(m.get_body().get_content())
    ]
    link = link_in(notice[-1], "/email-change/revert/")
    clock.advance(timedelta(days=6))
    page = other_client.get(link)
    assert page.status_code == 200 and "ada@example.com" in page.get_data(as_text=True)
    r = other_client.post(link, data={"csrf_token": csrf_token(other_client)})
    assert r.status_code == 200
    row = user_row("ada@example.com")
    assert row is not None and row.email_verified and user_row("typo@example.com") is None
    assert client.get("/profile").status_code == 302  # whoever changed it is signed out
    assert other_client.post(link, data={"csrf_token": csrf_token(other_client)}).status_code == 400
    assert login(other_client, "ada@example.com").status_code == 302


def test_revert_link_expires_after_7_days(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    post(
        client, "/profile/email", htmx=True, new_email="new@example.com", current_password=PASSWORD
    )
    work()
    notice = [
        m
        for m in mails(app)
        if m["To"] == "ada@example.com"
        and "/email-change/revert/" in str(m.get_body().get_content())
    ]
    link = link_in(notice[-1], "/email-change/revert/")
    clock.advance(timedelta(days=7, seconds=1))
    r = client.post(link, data={"csrf_token": csrf_token(client, "/profile")})
    assert r.status_code == 400 and user_row("new@example.com") is not None
