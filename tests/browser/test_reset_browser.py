""" "Forgot password?" in real Chromium, with and without JavaScript: from the
sign-in page to the mail's link, the new password, and signing in with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.accounts.conftest import NEW_PASSWORD
from tests.browser import flows

pytestmark = pytest.mark.browser

NEUTRAL = "If an account exists for that address, we have sent a link to reset the password."


@pytest.mark.parametrize("js", [True, False], ids=["htmx", "no-js"])
def test_forgot_password_end_to_end(
    new_page: Callable[..., Any], server: str, app: Any, work: Any, js: bool
) -> None:
    page = new_page(js=js)
    flows.register(page, server, "ada@example.com")
    elsewhere = new_page(js=js)
    flows.sign_in(elsewhere, server, "ada@example.com")

    page.goto(f"{server}/login")
    page.get_by_role("link", name="Forgot password?").click()
    page.wait_for_url(f"{server}/reset-password")
    page.get_by_label("Email", exact=True).fill("ada@example.com")
    with page.expect_response(f"{server}/reset-password") as answer:
        page.get_by_role("button", name="Send reset link").click()
    sent_by_htmx = answer.value.request.headers.get("hx-request") == "true"
    assert sent_by_htmx is js
    flows.banner(page, "status", NEUTRAL)

    work()
    (link,) = flows.links_to(app, "ada@example.com", "/reset-password/")
    page.goto(server + link)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("Confirm new password", exact=True).fill(NEW_PASSWORD + "x")
    page.get_by_role("button", name="Set new password").click()
    flows.banner(page, "alert", "The new passwords do not match.")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("Confirm new password", exact=True).fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set new password").click()
    page.wait_for_url(f"{server}/login")
    flows.banner(page, "status", "Your password has been reset. Please sign in.")

    flows.fill_sign_in(page, "ada@example.com", NEW_PASSWORD)
    page.wait_for_url(f"{server}/profile")
    elsewhere.goto(f"{server}/profile")
    expect(elsewhere).to_have_url(f"{server}/login?next=/profile")  # signed out everywhere

    page.goto(server + link)  # used
    flows.banner(page, "alert", "This link is invalid or has expired.")
