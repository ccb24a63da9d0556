"""The same flows with JavaScript disabled: every form posts normally and the
server answers the whole page with the section's banner shown."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from babel.dates import format_date
from playwright.sync_api import expect

from tests.browser import flows
from tests.browser.flows import banner, section
from tests.support.accounts import NEW_PASSWORD, PASSWORD

pytestmark = pytest.mark.browser


@pytest.fixture
def nojs(new_page: Callable[..., Any]) -> Any:
    return new_page(js=False)


def submit(page: Any, region: Any, button: str, server: str, path: str) -> int:
    """Click a section's button; the answer must be a whole page. Returns its status."""
    with page.expect_response(f"{server}{path}") as answer:
        region.get_by_role("button", name=button).click()
    response = answer.value
    assert response.request.headers.get("hx-request") is None  # a plain form post
    assert "<html" in response.text()
    page.wait_for_load_state()
    # The whole profile page is back, all four sections in it.
    expect(page.get_by_role("heading", level=1)).to_have_text("Your profile")
    for name in ("Account", "Change password", "Change email", "Danger zone"):
        expect(section(page, name)).to_be_visible()
    return int(response.status)


def test_without_js_sign_up_and_change_password(
    nojs: Any, new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    page = nojs
    flows.register(page, server, "ada@example.com")
    flows.verify_by_mail(page, server, app, work, "ada@example.com")
    flows.sign_in(page, server, "ada@example.com")
    expect(page.get_by_test_id("profile-email-badge")).to_have_text("Verified")
    elsewhere = new_page(js=False)
    flows.sign_in(elsewhere, server, "ada@example.com")

    def fill(current: str, new: str, confirm: str) -> Any:
        pw = section(page, "Change password")
        pw.get_by_label("Current password", exact=True).fill(current)
        pw.get_by_label("New password", exact=True).fill(new)
        pw.get_by_label("Confirm new password").fill(confirm)
        return pw

    # Without the script the server checks the mismatch, before anything else.
    pw = fill("not my password at all", NEW_PASSWORD, NEW_PASSWORD + "X")
    assert submit(page, pw, "Change password", server, "/profile/password") == 422
    banner(section(page, "Change password"), "alert", "The new passwords do not match.")

    pw = fill("not my password at all", NEW_PASSWORD, NEW_PASSWORD)
    assert submit(page, pw, "Change password", server, "/profile/password") == 422
    banner(section(page, "Change password"), "alert", "The current password is not correct.")

    pw = fill(PASSWORD, "short one", "short one")
    assert submit(page, pw, "Change password", server, "/profile/password") == 422
    banner(
        section(page, "Change password"),
        "alert",
        "The password must be at least 15 characters long.",
    )

    pw = fill(PASSWORD, NEW_PASSWORD, NEW_PASSWORD)
    assert submit(page, pw, "Change password", server, "/profile/password") == 200
    pw = section(page, "Change password")
    banner(pw, "status", "Your password has been changed.")
    for label in ("Current password", "New password", "Confirm new password"):
        expect(pw.get_by_label(label, exact=True)).to_have_value("")
    # Only the section that was posted shows a banner.
    for name in ("Account", "Change email", "Danger zone"):
        expect(section(page, name).get_by_role("status")).to_have_count(0)
        expect(section(page, name).get_by_role("alert")).to_have_count(0)

    elsewhere.goto(f"{server}/profile")
    elsewhere.wait_for_url(f"{server}/login?next=/profile")
    page.goto(f"{server}/profile")
    expect(page.get_by_role("heading", level=1)).to_have_text("Your profile")


def test_without_js_change_email(nojs: Any, server: str) -> None:
    page = nojs
    flows.register(page, server, "bob@example.com")
    flows.register_and_sign_in(page, server, "ada@example.com")

    em = section(page, "Change email")
    em.get_by_label("New email").fill("bob@example.com")
    em.get_by_label("Current password", exact=True).fill("not my password at all")
    assert submit(page, em, "Change email", server, "/profile/email") == 422
    em = section(page, "Change email")
    banner(em, "alert", "The current password is not correct.")
    expect(em.get_by_label("New email")).to_have_value("bob@example.com")

    em.get_by_label("Current password", exact=True).fill(PASSWORD)
    assert submit(page, em, "Change email", server, "/profile/email") == 422
    em = section(page, "Change email")
    banner(em, "alert", "That email address is already in use.")

    em.get_by_label("New email").fill("ada.new@example.com")
    em.get_by_label("Current password", exact=True).fill(PASSWORD)
    assert submit(page, em, "Change email", server, "/profile/email") == 200
    banner(section(page, "Change email"), "status", "Your email address has been changed.")
    expect(flows.current_email_line(page)).to_contain_text("Current email: ada.new@example.com")
    expect(page.get_by_test_id("profile-email-badge")).to_have_text("Not verified")


def test_without_js_request_and_cancel_deletion(nojs: Any, server: str, clock: Any) -> None:
    page = nojs
    flows.register_and_sign_in(page, server)
    danger = section(page, "Danger zone")
    danger.get_by_label("Current password", exact=True).fill("not my password at all")
    assert submit(page, danger, "Delete account", server, "/profile/delete") == 422
    banner(section(page, "Danger zone"), "alert", "The current password is not correct.")

    danger = section(page, "Danger zone")
    danger.get_by_label("Current password", exact=True).fill(PASSWORD)
    assert submit(page, danger, "Delete account", server, "/profile/delete") == 200
    date = format_date((clock.now() + timedelta(days=14)).date(), "long", locale="en")
    danger = section(page, "Danger zone")
    banner(danger, "status", f"Your account will be deleted on {date}.")

    assert submit(page, danger, "Cancel deletion", server, "/profile/cancel-deletion") == 200
    danger = section(page, "Danger zone")
    banner(danger, "status", "Deletion cancelled.")
    expect(danger.get_by_role("button", name="Delete account")).to_be_visible()


def test_without_js_account_section(
    nojs: Any, new_page: Callable[..., Any], server: str, app: Any, work: Any, clock: Any
) -> None:
    page = nojs
    flows.register_and_sign_in(page, server)
    elsewhere = new_page(js=False)
    flows.sign_in(elsewhere, server, "ada@example.com")

    account = section(page, "Account")
    clock.advance(61)  # resending waits a minute after the last verification mail
    path = "/profile/resend-verification"
    assert submit(page, account, "Resend verification email", server, path) == 200
    banner(
        section(page, "Account"),
        "status",
        "We are sending a new verification email to ada@example.com.",
    )
    work()
    assert len(flows.links_to(app, "ada@example.com", "/verify-email/")) == 2

    account = section(page, "Account")
    assert submit(page, account, "Sign out other sessions", server, "/profile/sessions") == 200
    banner(section(page, "Account"), "status", "All other sessions have been signed out.")
    elsewhere.goto(f"{server}/profile")
    elsewhere.wait_for_url(f"{server}/login?next=/profile")

    # The language form answers the whole page in the new language.
    account = section(page, "Account")
    account.get_by_label("Language").select_option("de")
    with page.expect_response(f"{server}/profile/language") as answer:
        account.get_by_role("button", name="Save language").click()
    assert answer.value.status == 200
    page.wait_for_load_state()
    assert flows.lang_of(page) == "de"
    expect(page.get_by_role("heading", level=1)).to_have_text("Ihr Profil")
    banner(section(page, "Konto"), "status", "Ihre Sprache wurde gespeichert.")
