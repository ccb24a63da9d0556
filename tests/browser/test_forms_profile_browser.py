"""The error pattern on each profile section, with htmx and without JavaScript:
every error of a submit at once (the current password checked with the others),
the summary with links, each message at its field, focus on the summary or the
one field after a swap (on the summary after a page load), "Error: " in the title
while errors show, and success messages announced through the page's one
persistent live region."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import banner, section
from tests.support.accounts import NEW_PASSWORD, PASSWORD

pytestmark = pytest.mark.browser

HINT = "At least 15 characters. A few unrelated words make a good password."
PASSWORD_EMPTY = [
    ("Current password", "Enter your current password."),
    ("New password", "Enter a new password."),
    ("Confirm new password", "Enter the new password again."),
]
EMAIL_EMPTY = [
    ("New email", "Enter your new email address."),
    ("Current password", "Enter your current password."),
]
DANGER_EMPTY = [("Current password", "Enter your current password.")]


def fill_password(pw: Any, current: str, new: str, confirm: str) -> None:
    pw.get_by_label("Current password", exact=True).fill(current)
    pw.get_by_label("New password", exact=True).fill(new)
    pw.get_by_label("Confirm new password", exact=True).fill(confirm)
    pw.get_by_role("button", name="Change password").click()


def test_password_section_with_htmx(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    flows.no_navigation_marker(page)
    live = flows.announced(page)
    live.evaluate("el => el.dataset.probe = 'kept'")
    pw = section(page, "Change password")

    pw.get_by_role("button", name="Change password").click()
    a11y.expect_errors(page, pw, PASSWORD_EMPTY, hints={"New password": HINT})
    expect(a11y.summary(pw)).to_be_focused()  # more than one error: the summary
    expect(page).to_have_title("Error: Your profile")
    a11y.expect_links_move_focus(pw, PASSWORD_EMPTY)

    # Every error at once, the wrong current password included, in field order.
    fill_password(pw, "not my password at all", "short one", "short two")
    a11y.expect_errors(
        page,
        pw,
        [
            ("Current password", "The current password is not correct."),
            ("New password", "The password must be at least 15 characters long."),
            ("Confirm new password", "The new passwords do not match."),
        ],
        hints={"New password": HINT},
    )
    expect(a11y.summary(pw)).to_be_focused()

    # One error: focus goes straight to the field, which reads its message.
    fill_password(pw, "not my password at all", NEW_PASSWORD, NEW_PASSWORD)
    a11y.expect_errors(page, pw, [("Current password", "The current password is not correct.")])
    expect(pw.get_by_label("Current password", exact=True)).to_be_focused()

    fill_password(pw, PASSWORD, NEW_PASSWORD, NEW_PASSWORD)
    shown = banner(pw, "status", "Your password has been changed.")
    expect(shown).not_to_have_attribute("role", "status")  # announced once, by the region
    expect(live).to_have_text("Your password has been changed.")
    assert live.get_attribute("data-probe") == "kept"  # the same region, new text
    a11y.expect_no_errors(page, pw)
    expect(page).to_have_title("Your profile")
    assert flows.still_same_document(page)


def test_email_danger_and_account_sections_with_htmx(
    page: Any, new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    flows.register_and_sign_in(page, server)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    em = section(page, "Change email")
    em.get_by_role("button", name="Change email").click()
    a11y.expect_errors(page, em, EMAIL_EMPTY)
    expect(a11y.summary(em)).to_be_focused()
    a11y.expect_links_move_focus(em, EMAIL_EMPTY)

    # novalidate: a malformed address gets our message, from the server.
    em.get_by_label("New email").fill("not an address")
    em.get_by_label("Current password", exact=True).fill(PASSWORD)
    em.get_by_role("button", name="Change email").click()
    a11y.expect_errors(page, em, [("New email", "Enter a valid email address.")])
    expect(em.get_by_label("New email")).to_be_focused()
    expect(em.get_by_label("New email")).to_have_value("not an address")
    assert posts == [f"{server}/profile/email"] * 2

    danger = section(page, "Danger zone")
    danger.get_by_role("button", name="Delete account").click()
    a11y.expect_errors(page, danger, DANGER_EMPTY)
    expect(danger.get_by_label("Current password", exact=True)).to_be_focused()
    # Two sections show errors; the title keeps its prefix while any does.
    expect(page).to_have_title("Error: Your profile")

    # Account: a success is announced; an error of the whole form (no field
    # to link to) is listed without a link and takes focus itself.
    account = section(page, "Account")
    account.get_by_role("button", name="Sign out other sessions").click()
    banner(account, "status", "All other sessions have been signed out.")
    expect(flows.announced(page)).to_have_text("All other sessions have been signed out.")
    work()
    (link,) = flows.links_to(app, "ada@example.com", "/verify-email/")
    elsewhere = new_page()
    elsewhere.goto(server + link)
    elsewhere.get_by_role("button", name="Verify email address").click()
    banner(elsewhere, "status", "Your email address has been verified.")
    account.get_by_role("button", name="Resend verification email").click()
    box = a11y.summary(account)
    expect(box.locator("li")).to_have_text(["Your email address is already verified."])
    expect(box.get_by_role("link")).to_have_count(0)
    expect(box).to_be_focused()
    expect(flows.announced(page)).to_have_text("")  # no stale success is left to read


@pytest.fixture
def nojs(new_page: Callable[..., Any]) -> Any:
    return new_page(js=False)


def test_every_section_without_javascript(nojs: Any, server: str) -> None:
    page = nojs
    flows.register_and_sign_in(page, server)
    cases = [
        ("Change password", "Change password", PASSWORD_EMPTY, {"New password": HINT}),
        ("Change email", "Change email", EMAIL_EMPTY, {}),
        ("Danger zone", "Delete account", DANGER_EMPTY, {}),
    ]
    for name, button, errors, hints in cases:
        section(page, name).get_by_role("button", name=button).click()
        page.wait_for_load_state()
        region = section(page, name)
        a11y.expect_errors(page, region, errors, hints=hints)
        expect(a11y.summary(region)).to_be_focused()  # a page load: the summary
        expect(page).to_have_title("Error: Your profile")
        expect(a11y.summary(page)).to_have_count(1)  # only the section posted
        a11y.expect_links_move_focus(region, errors)

    fill_password(section(page, "Change password"), "not my password at all", "x", "y")
    page.wait_for_load_state()
    a11y.expect_errors(
        page,
        section(page, "Change password"),
        [
            ("Current password", "The current password is not correct."),
            ("New password", "The password must be at least 15 characters long."),
            ("Confirm new password", "The new passwords do not match."),
        ],
        hints={"New password": HINT},
    )

    # A success after a page load: its banner has focus, the title no prefix.
    account = section(page, "Account")
    account.get_by_role("button", name="Sign out other sessions").click()
    page.wait_for_load_state()
    shown = banner(section(page, "Account"), "status", "All other sessions have been signed out.")
    expect(shown).to_be_focused()
    a11y.expect_no_errors(page, page.locator("main"))


# Chromium drops focus from a disabled control only at its next rendering update.
# An answer that lands before it finds the submit button still focused, and htmx
# then focuses the new button with the same id. This listener makes that order
# certain: the old button has focus when the swap begins.
STILL_FOCUSED_AT_SWAP = """() => document.body.addEventListener("htmx:beforeSwap", () => {
  const old = document.getElementById("profile-password-submit");
  old.disabled = false;
  old.focus();
})"""


def test_focus_follows_errors_when_the_button_still_had_focus(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    page.evaluate(STILL_FOCUSED_AT_SWAP)
    pw = section(page, "Change password")

    pw.get_by_role("button", name="Change password").click()
    a11y.expect_errors(page, pw, PASSWORD_EMPTY, hints={"New password": HINT})
    expect(a11y.summary(pw)).to_be_focused()

    fill_password(pw, "not my password at all", NEW_PASSWORD, NEW_PASSWORD)
    a11y.expect_errors(page, pw, [("Current password", "The current password is not correct.")])
    expect(pw.get_by_label("Current password", exact=True)).to_be_focused()

    fill_password(pw, PASSWORD, NEW_PASSWORD, NEW_PASSWORD)
    banner(pw, "status", "Your password has been changed.")
    expect(pw.get_by_role("button", name="Change password")).to_be_focused()
