"""Sign-up in a real browser: register, the verification link from the instance's
mail folder (sent by the real RQ worker), confirm, sign in, sign out."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import flows
from tests.browser.flows import banner, section
from tests.support.accounts import PASSWORD

pytestmark = pytest.mark.browser


def test_register_verify_by_mail_link_then_sign_in(
    page: Any, server: str, app: Any, work: Any
) -> None:
    flows.register(page, server, "Ada@Example.com")  # stored lower-cased
    expect(page.get_by_role("heading", level=1)).to_have_text("Check your inbox")

    # Nobody is signed in by registering: the profile sends to sign-in, keeping the target.
    page.goto(f"{server}/profile")
    page.wait_for_url(f"{server}/login?next=/profile")

    # The worker sends the mail; its link opens a page that changes nothing until confirmed.
    work()
    (link,) = flows.links_to(app, "ada@example.com", "/verify-email/")
    assert flows.subjects_to(app, "ada@example.com") == ["Verify your email address"]
    page.goto(server + link)
    expect(page.get_by_role("heading", level=1)).to_have_text("Verify your email address")
    page.get_by_role("button", name="Verify email address").click()
    banner(page, "status", "Your email address has been verified.")

    # The link is single use.
    page.goto(server + link)
    banner(page, "alert", "This link has already been used.")

    # Sign in from the login page reached through /profile: back to the profile.
    page.goto(f"{server}/profile")
    flows.fill_sign_in(page, "ada@example.com")
    page.wait_for_url(f"{server}/profile")
    account = section(page, "Account")
    expect(account).to_contain_text("Current email: ada@example.com")
    expect(account.get_by_test_id("profile-email-badge")).to_have_text("Verified")
    expect(account.get_by_role("button", name="Resend verification email")).to_have_count(0)

    # Sign out (a POST button in the header) ends the session.
    page.get_by_role("navigation", name="Main").get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{server}/login")
    banner(page, "status", "You have been signed out.")
    page.goto(f"{server}/profile")
    page.wait_for_url(f"{server}/login?next=/profile")


def test_failed_sign_in_says_the_same_for_unknown_address_and_wrong_password(
    page: Any, server: str
) -> None:
    flows.register(page, server, "ada@example.com")
    for address, password in [
        ("ada@example.com", "not the right password"),
        ("nobody@example.com", PASSWORD),
    ]:
        page.goto(f"{server}/login")
        flows.fill_sign_in(page, address, password)
        banner(page, "alert", "The email address or password is not correct.")
        assert page.url == f"{server}/login"
        # The address stays typed, the password does not.
        assert page.get_by_label("Email", exact=True).input_value() == address
        assert page.get_by_label("Password", exact=True).input_value() == ""


def test_registration_errors_are_shown_on_the_form(page: Any, server: str) -> None:
    page.goto(f"{server}/register")
    page.get_by_label("Email", exact=True).fill("ada@example.com")
    page.get_by_label("Password", exact=True).fill("too short")
    page.get_by_label("Confirm password", exact=True).fill("too short")
    page.get_by_role("button", name="Create account").click()
    banner(page, "alert", "The password must be at least 15 characters long.")
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("aria-invalid", "true")
    assert page.get_by_label("Email", exact=True).input_value() == "ada@example.com"
