""" "Forgot password?" in real Chromium, with and without JavaScript: from the
sign-in page to the mail's link, the new password, and signing in with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.support.accounts import NEW_PASSWORD

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


HINT = "At least 15 characters. A few unrelated words make a good password."
NEW = "New password"
CONFIRM = "Confirm new password"


def _link(page: Any, server: str, app: Any, work: Any) -> str:
    flows.register(page, server, "ada@example.com")
    page.goto(f"{server}/reset-password")
    page.get_by_label("Email", exact=True).fill("ada@example.com")
    page.get_by_role("button", name="Send reset link").click()
    flows.banner(page, "status", NEUTRAL)
    work()
    (link,) = flows.links_to(app, "ada@example.com", "/reset-password/")
    return link


@pytest.mark.parametrize("js", [True, False], ids=["htmx", "no-js"])
def test_reset_forms_follow_the_error_pattern(
    new_page: Callable[..., Any], server: str, app: Any, work: Any, js: bool
) -> None:
    page = new_page(js=js)
    page.goto(f"{server}/reset-password")
    a11y.expect_no_errors(page, page)
    page.get_by_role("button", name="Send reset link").click()  # empty: novalidate, server says
    email = [("Email", "Enter your email address.")]
    a11y.expect_errors(page, page, email)
    # One error: after a swap focus goes to its field; after a page load to the summary.
    if js:
        expect(page.get_by_label("Email", exact=True)).to_be_focused()
    else:
        expect(a11y.summary(page)).to_be_focused()
    a11y.expect_links_move_focus(page, email)
    if js:  # the neutral answer is announced by the page's live region
        page.get_by_label("Email", exact=True).fill("nobody@example.com")
        page.get_by_role("button", name="Send reset link").click()
        expect(flows.announced(page)).to_have_text(NEUTRAL)
        a11y.expect_no_errors(page, page)

    link = _link(page, server, app, work)
    page.goto(server + link)
    a11y.expect_no_errors(page, page)
    page.get_by_role("button", name="Set new password").click()
    both = [(NEW, "Enter a new password."), (CONFIRM, "Enter the new password again.")]
    a11y.expect_errors(page, page, both, hints={NEW: HINT})
    expect(a11y.summary(page)).to_be_focused()  # more than one error: the summary
    a11y.expect_links_move_focus(page, both)
    page.get_by_label(NEW, exact=True).fill("short")
    page.get_by_label(CONFIRM, exact=True).fill("shorter")
    page.get_by_role("button", name="Set new password").click()
    a11y.expect_errors(
        page,
        page,
        [
            (NEW, "The password must be at least 15 characters long."),
            (CONFIRM, "The new passwords do not match."),
        ],
        hints={NEW: HINT},
    )
    expect(page.get_by_label(NEW, exact=True)).to_have_value("")  # never sent back
    page.get_by_label(NEW, exact=True).fill(NEW_PASSWORD)
    page.get_by_label(CONFIRM, exact=True).fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set new password").click()
    page.wait_for_url(f"{server}/login")
    flows.banner(page, "status", "Your password has been reset. Please sign in.")


def test_a_link_spent_while_the_form_is_open_says_so_with_htmx(
    new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    """htmx swaps no 400: the answer sends the browser to the link's page instead,
    which says the link is invalid (not a button that seems to do nothing)."""
    page = new_page()
    link = _link(page, server, app, work)
    page.goto(server + link)
    other = new_page(js=False)
    other.goto(server + link)
    other.get_by_label(NEW, exact=True).fill(NEW_PASSWORD)
    other.get_by_label(CONFIRM, exact=True).fill(NEW_PASSWORD)
    other.get_by_role("button", name="Set new password").click()
    other.wait_for_url(f"{server}/login")
    page.get_by_label(NEW, exact=True).fill(NEW_PASSWORD)
    page.get_by_label(CONFIRM, exact=True).fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set new password").click()
    flows.banner(page, "alert", "This link is invalid or has expired.")
    expect(page.get_by_role("link", name="Request a new link")).to_be_visible()
