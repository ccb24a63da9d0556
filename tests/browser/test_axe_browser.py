"""axe-core (WCAG 2.0/2.1 A and AA plus best practice) over every page state of
sign-up, sign-in, verification, "Forgot password?" and the profile: blank, with errors, after a
success; htmx swaps and full-page answers; English and German. Any serious or
critical violation fails. The script is injected, so these pages come from a
context with the CSP bypassed (only here: every other test runs under the CSP)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import section
from tests.support.accounts import PASSWORD

pytestmark = pytest.mark.browser


@pytest.fixture
def audited(new_page: Callable[..., Any]) -> Callable[..., Any]:
    def make(locale: str = "en-US") -> Any:
        return new_page(locale=locale, bypass_csp=True)

    return make


def full_page_submit(page: Any, form_selector: str) -> None:
    """Post a form as the browser does without JavaScript (form.submit() fires no
    submit event, so htmx stays out): the full-page answer, under axe's eye."""
    with page.expect_navigation():
        page.locator(form_selector).evaluate("form => form.submit()")


def test_sign_up_sign_in_and_verification_pages(
    audited: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    page = audited()
    page.goto(f"{server}/register")
    a11y.audit(page, "sign-up, blank")
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_role("button", name="Create account").click()
    expect(a11y.summary(page)).to_be_visible()
    a11y.audit(page, "sign-up, errors")
    page.keyboard.press("Shift+Tab")  # focus rings and the shown skip link, too
    flows.register(page, server, "ada@example.com")
    a11y.audit(page, "sign-up, done")

    page.goto(f"{server}/login")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to main content")).to_be_focused()
    a11y.audit(page, "sign-in, blank, skip link shown")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(a11y.summary(page)).to_be_visible()
    a11y.audit(page, "sign-in, errors")
    flows.fill_sign_in(page, "ada@example.com", "not the right password")
    expect(a11y.summary(page)).to_contain_text("not correct")
    a11y.audit(page, "sign-in, refused")

    work()
    (link,) = flows.links_to(app, "ada@example.com", "/verify-email/")
    page.goto(server + link)
    a11y.audit(page, "verify, confirm")
    page.get_by_role("button", name="Verify email address").click()
    flows.banner(page, "status", "Your email address has been verified.")
    a11y.audit(page, "verify, done")
    page.goto(server + link)
    flows.banner(page, "alert", "This link has already been used.")
    a11y.audit(page, "verify, used link")


def test_profile_states_with_htmx_and_as_full_pages(
    audited: Callable[..., Any], server: str
) -> None:
    page = audited()
    flows.register_and_sign_in(page, server)
    a11y.audit(page, "profile, blank")

    for name, button in (
        ("Change password", "Change password"),
        ("Change email", "Change email"),
        ("Danger zone", "Delete account"),
    ):
        region = section(page, name)
        region.get_by_role("button", name=button).click()
        expect(a11y.summary(region)).to_be_visible()
        a11y.audit(page, f"profile, {name} errors (htmx)")

    em = section(page, "Change email")
    em.get_by_label("New email").fill("ada.new@example.com")
    em.get_by_label("Current password", exact=True).fill(PASSWORD)
    em.get_by_role("button", name="Change email").click()
    flows.banner(em, "status", "Your email address has been changed.")
    a11y.audit(page, "profile, email changed (htmx), other sections still in error")

    danger = section(page, "Danger zone")
    danger.get_by_label("Current password", exact=True).fill(PASSWORD)
    danger.get_by_role("button", name="Delete account").click()
    flows.banner(danger, "status", "Your account will be deleted on")
    a11y.audit(page, "profile, deletion requested (htmx)")

    # The same forms answered as whole pages (what a browser without JS gets).
    for form in ("#profile-password form", "#profile-email form"):
        full_page_submit(page, form)
        expect(a11y.summary(page)).to_be_focused()
        a11y.audit(page, f"profile, full page, {form} errors")
    full_page_submit(page, "#profile-danger form")
    flows.banner(section(page, "Danger zone"), "status", "Deletion cancelled.")
    a11y.audit(page, "profile, full page, deletion cancelled")
    full_page_submit(page, "#profile-account form[action$='/sessions']")
    a11y.audit(page, "profile, full page, sessions signed out")


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "full-page"])
def test_reset_password_states(
    audited: Callable[..., Any], server: str, app: Any, work: Any, htmx: bool
) -> None:
    """Request and set-new-password forms: blank, empty submit, weak password with a
    mismatch, the neutral answer, an invalid link; swapped by htmx or answered as
    whole pages (what a browser without JavaScript gets)."""
    page = audited()

    def submit(form: str, button: str) -> None:
        if htmx:
            page.locator(form).get_by_role("button", name=button).click()
        else:
            full_page_submit(page, form)

    flows.register(page, server, "ada@example.com")
    page.goto(f"{server}/reset-password")
    a11y.audit(page, "reset request, blank")
    submit("#reset-request form", "Send reset link")
    expect(a11y.summary(page)).to_contain_text("Enter your email address.")
    a11y.audit(page, "reset request, empty submit")
    page.get_by_label("Email", exact=True).fill("ada@example.com")
    submit("#reset-request form", "Send reset link")
    flows.banner(page, "status", "If an account exists for that address")
    a11y.audit(page, "reset request, neutral answer")

    work()
    (link,) = flows.links_to(app, "ada@example.com", "/reset-password/")
    page.goto(server + link)
    a11y.audit(page, "set password, blank")
    submit("#reset-password form", "Set new password")
    expect(a11y.summary(page)).to_contain_text("Enter a new password.")
    a11y.audit(page, "set password, empty submit")
    page.get_by_label("New password", exact=True).fill("short")
    page.get_by_label("Confirm new password", exact=True).fill("shorter")
    submit("#reset-password form", "Set new password")
    expect(a11y.summary(page)).to_contain_text("The new passwords do not match.")
    expect(a11y.summary(page)).to_contain_text("at least 15 characters")
    a11y.audit(page, "set password, weak and mismatch")
    page.goto(f"{server}/reset-password/not-a-token")
    flows.banner(page, "alert", "This link is invalid or has expired.")
    a11y.audit(page, "set password, invalid link")


def test_german_pages(audited: Callable[..., Any], server: str) -> None:
    page = audited(locale="de-DE")
    page.goto(f"{server}/register")
    page.get_by_role("button", name="Konto erstellen").click()
    expect(a11y.summary(page)).to_contain_text("Es gibt ein Problem")
    a11y.audit(page, "de, sign-up errors")
    flows.register(page, server, "ute@example.com", lang="de")
    flows.sign_in(page, server, "ute@example.com", lang="de")
    pw = section(page, "Passwort ändern")
    pw.get_by_role("button", name="Passwort ändern").click()
    expect(a11y.summary(pw)).to_be_focused()
    a11y.audit(page, "de, profile password errors (htmx)")
    full_page_submit(page, "#profile-email form")
    expect(page).to_have_title("Fehler: Ihr Profil")
    a11y.audit(page, "de, profile email errors (full page)")


def test_the_audit_fails_on_a_serious_violation(audited: Callable[..., Any]) -> None:
    """The harness itself: an unlabelled field (critical) and low contrast (serious)."""
    page = audited()
    page.set_content(
        '<html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
        '<input type="text"><p style="color:#bbb;background:#fff">faint</p></main></body></html>'
    )
    with pytest.raises(AssertionError) as failed:
        a11y.audit(page, "broken on purpose")
    assert '"rule": "label"' in str(failed.value)
    assert '"rule": "color-contrast"' in str(failed.value)
