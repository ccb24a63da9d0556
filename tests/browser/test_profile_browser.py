"""The profile screen in a real browser with htmx: each section's success and
error paths, only the section swapped, the out-of-band Current email line, and
the submitting state (inputs disabled, indicator shown)."""

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


# -- only the section is swapped --------------------------------------------------


def test_password_error_swaps_only_its_section(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    flows.no_navigation_marker(page)
    page.get_by_label("New email").fill("typed@example.com")  # state elsewhere
    # The Danger zone element is marked: a re-render anywhere but the target would drop it.
    page.get_by_test_id("profile-danger").evaluate("el => el.dataset.probe = 'kept'")
    pw = section(page, "Change password")
    pw.get_by_label("Current password", exact=True).fill("not my password at all")
    pw.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    pw.get_by_label("Confirm new password").fill(NEW_PASSWORD)
    with page.expect_response(f"{server}/profile/password") as answer:
        pw.get_by_role("button", name="Change password").click()
    response = answer.value
    assert response.status == 422
    fragment = response.text()
    assert fragment.lstrip().startswith("<section") and "<html" not in fragment
    alert = banner(pw, "alert", "The current password is not correct.")
    expect(alert).to_have_count(1)
    expect(pw.get_by_label("Current password", exact=True)).to_have_attribute(
        "aria-invalid", "true"
    )
    assert page.get_by_label("New email").input_value() == "typed@example.com"
    assert page.get_by_test_id("profile-danger").get_attribute("data-probe") == "kept"
    assert flows.still_same_document(page)


# -- change password ----------------------------------------------------------------


def test_change_password_policy_errors_then_success_signs_out_other_sessions(
    page: Any, new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    flows.register_and_sign_in(page, server)
    elsewhere = new_page()
    flows.sign_in(elsewhere, server, "ada@example.com")
    pw = section(page, "Change password")

    def submit(new: str) -> None:
        pw.get_by_label("Current password", exact=True).fill(PASSWORD)
        pw.get_by_label("New password", exact=True).fill(new)
        pw.get_by_label("Confirm new password").fill(new)
        pw.get_by_role("button", name="Change password").click()

    # Each policy failure names its rule and marks the new-password field.
    for new, text in [
        ("short one", "The password must be at least 15 characters long."),
        ("123456789987654321", "This password is too common."),
        ("ada@example.com", "The password must not be your email address."),
    ]:
        submit(new)
        banner(pw, "alert", text)
        expect(pw.get_by_label("New password", exact=True)).to_have_attribute(
            "aria-invalid", "true"
        )

    submit(NEW_PASSWORD)
    banner(pw, "status", "Your password has been changed.")
    for label in ("Current password", "New password", "Confirm new password"):
        expect(pw.get_by_label(label, exact=True)).to_have_value("")

    # This browser stays signed in; the other session is over.
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("Your profile")
    elsewhere.reload()
    elsewhere.wait_for_url(f"{server}/login?next=/profile")

    # A notice mail; the new password signs in, the old one no longer does.
    work()
    assert "Your password was changed" in flows.subjects_to(app, "ada@example.com")
    other = new_page()
    other.goto(f"{server}/login")
    flows.fill_sign_in(other, "ada@example.com", PASSWORD)
    banner(other, "alert", "The email address or password is not correct.")
    flows.sign_in(other, server, "ada@example.com", NEW_PASSWORD)


# -- change email -------------------------------------------------------------------


def test_change_email_errors(page: Any, server: str) -> None:
    flows.register(page, server, "bob@example.com")
    flows.register_and_sign_in(page, server, "ada@example.com")
    em = section(page, "Change email")

    def submit(new: str, password: str = PASSWORD) -> None:
        em.get_by_label("New email").fill(new)
        em.get_by_label("Current password", exact=True).fill(password)
        em.get_by_role("button", name="Change email").click()

    cases = [
        ("ada.new@example.com", "wrong password entirely", "The current password is not correct."),
        ("ADA@example.com", PASSWORD, "That is already your email address."),
        ("Bob@Example.com", PASSWORD, "That email address is already in use."),
        ("ada@example", PASSWORD, "Enter a valid email address."),  # the browser accepts it
    ]
    for new, password, text in cases:
        submit(new, password)
        banner(em, "alert", text)
        # What was typed stays for correcting; the password never comes back.
        expect(em.get_by_label("New email")).to_have_value(new)
        expect(em.get_by_label("Current password", exact=True)).to_have_value("")
    expect(flows.current_email_line(page)).to_contain_text("ada@example.com")


def test_email_change_updates_current_line_and_badge_out_of_band(
    page: Any, server: str, app: Any, work: Any
) -> None:
    flows.register(page, server, "ada@example.com")
    flows.verify_by_mail(page, server, app, work, "ada@example.com")
    flows.sign_in(page, server, "ada@example.com")
    account = section(page, "Account")
    expect(account.get_by_test_id("profile-email-badge")).to_have_text("Verified")
    expect(account.get_by_role("button", name="Resend verification email")).to_have_count(0)
    flows.no_navigation_marker(page)
    page.get_by_label("New password", exact=True).fill("typed elsewhere")

    em = section(page, "Change email")
    em.get_by_label("New email").fill("Ada.New@Example.com")
    em.get_by_label("Current password", exact=True).fill(PASSWORD)
    em.get_by_role("button", name="Change email").click()
    banner(em, "status", "Your email address has been changed.")
    expect(em.get_by_label("New email")).to_have_value("")

    # Out of band: the Account section's line and badge, without reloading the page.
    expect(flows.current_email_line(page)).to_contain_text("Current email: ada.new@example.com")
    expect(account.get_by_test_id("profile-email-badge")).to_have_text("Not verified")
    expect(account.get_by_role("button", name="Resend verification email")).to_be_visible()
    assert page.get_by_label("New password", exact=True).input_value() == "typed elsewhere"
    assert flows.still_same_document(page)

    # The new address gets the verification link, the old one the revert link.
    work()
    assert flows.links_to(app, "ada.new@example.com", "/verify-email/")
    (revert,) = flows.links_to(app, "ada@example.com", "/email-change/revert/")
    page.goto(server + revert)
    page.get_by_role("button", name="Restore my previous address").click()
    banner(page, "status", "ada@example.com is the address of your account again")
    page.goto(f"{server}/profile")  # every session was signed out, this one too
    page.wait_for_url(f"{server}/login?next=/profile")
    flows.fill_sign_in(page, "ada@example.com")
    expect(flows.current_email_line(page)).to_contain_text("ada@example.com")
    expect(page.get_by_test_id("profile-email-badge")).to_have_text("Verified")


# -- danger zone ---------------------------------------------------------------------


def test_deletion_request_shows_the_date_and_can_be_cancelled(
    page: Any, server: str, app: Any, work: Any, clock: Any
) -> None:
    flows.register_and_sign_in(page, server)
    danger = section(page, "Danger zone")
    danger.get_by_label("Current password", exact=True).fill("not my password at all")
    danger.get_by_role("button", name="Delete account").click()
    banner(danger, "alert", "The current password is not correct.")
    expect(danger.get_by_role("button", name="Cancel deletion")).to_have_count(0)

    danger.get_by_label("Current password", exact=True).fill(PASSWORD)
    danger.get_by_role("button", name="Delete account").click()
    date = format_date((clock.now() + timedelta(days=14)).date(), "long", locale="en")
    banner(danger, "status", f"Your account will be deleted on {date}.")
    expect(danger.get_by_role("button", name="Delete account")).to_have_count(0)
    work()
    assert "Your account will be deleted" in flows.subjects_to(app, "ada@example.com")

    # Still there after a reload, and the user can still use the page.
    page.reload()
    danger = section(page, "Danger zone")
    expect(danger.get_by_test_id("profile-deletion-date")).to_contain_text(
        f"Your account will be deleted on {date}."
    )
    danger.get_by_role("button", name="Cancel deletion").click()
    banner(danger, "status", "Deletion cancelled.")
    expect(danger.get_by_role("button", name="Delete account")).to_be_visible()
    page.reload()
    expect(
        section(page, "Danger zone").get_by_role("button", name="Delete account")
    ).to_be_visible()


# -- account section -----------------------------------------------------------------


def test_resend_verification_sends_another_mail(
    page: Any, server: str, app: Any, work: Any, clock: Any
) -> None:
    flows.register_and_sign_in(page, server)
    work()
    assert len(flows.links_to(app, "ada@example.com", "/verify-email/")) == 1
    account = section(page, "Account")
    expect(account.get_by_test_id("profile-email-badge")).to_have_text("Not verified")
    account.get_by_role("button", name="Resend verification email").click()
    banner(account, "alert", "We sent a verification email less than a minute ago.")
    clock.advance(61)
    account.get_by_role("button", name="Resend verification email").click()
    banner(account, "status", "We are sending a new verification email to ada@example.com.")
    work()
    links = flows.links_to(app, "ada@example.com", "/verify-email/")
    assert len(links) == 2
    page.goto(server + links[-1])
    page.get_by_role("button", name="Verify email address").click()
    banner(page, "status", "Your email address has been verified.")


def test_sign_out_other_sessions(page: Any, new_page: Callable[..., Any], server: str) -> None:
    flows.register_and_sign_in(page, server)
    elsewhere = new_page()
    flows.sign_in(elsewhere, server, "ada@example.com")
    account = section(page, "Account")
    account.get_by_role("button", name="Sign out other sessions").click()
    banner(account, "status", "All other sessions have been signed out.")
    elsewhere.reload()
    elsewhere.wait_for_url(f"{server}/login?next=/profile")
    page.reload()  # this one goes on
    expect(page.get_by_role("heading", level=1)).to_have_text("Your profile")


def test_language_switch_reloads_the_page_in_the_chosen_language(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    account = section(page, "Account")
    account.get_by_label("Language").select_option(label="Deutsch")
    account.get_by_role("button", name="Save language").click()
    konto = section(page, "Konto")
    banner(konto, "status", "Ihre Sprache wurde gespeichert.")
    assert flows.lang_of(page) == "de"
    expect(page.get_by_role("heading", level=1)).to_have_text("Ihr Profil")
    expect(konto.get_by_label("Sprache")).to_have_value("de")
    # Saved: a reload stays German and shows the banner no more.
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("Ihr Profil")
    expect(section(page, "Konto").get_by_role("status")).to_have_count(0)


# -- submitting state ----------------------------------------------------------------


def test_inputs_are_disabled_and_indicator_shown_while_submitting(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)  # answered below, once the submitting state was checked

    forms = [
        ("Change password", "/profile/password", ["Current password", "New password", "Confirm new password"], "Change password"),
        ("Change email", "/profile/email", ["New email", "Current password"], "Change email"),
        ("Danger zone", "/profile/delete", ["Current password"], "Delete account"),
    ]  # fmt: skip
    for name, path, labels, button in forms:
        page.route(f"{server}{path}", hold)
        region = section(page, name)
        for label in labels:
            value = "someone@example.com" if label == "New email" else "not my password at all"
            region.get_by_label(label, exact=True).fill(value)
        indicator = region.get_by_text(flows.WORKING)
        expect(indicator).to_have_css("opacity", "0")
        region.get_by_role("button", name=button).click()

        for label in labels:
            expect(region.get_by_label(label, exact=True)).to_be_disabled()
        expect(region.get_by_role("button", name=button)).to_be_disabled()
        expect(indicator).to_have_css("opacity", "1")
        # Other sections stay usable meanwhile.
        expect(section(page, "Account").get_by_label("Language")).to_be_enabled()
        flows.held_request(page, held).continue_()
        assert not held, f"{path}: the request left twice"
        banner(region, "alert", "The current password is not correct.")
        for label in labels:
            expect(region.get_by_label(label, exact=True)).to_be_enabled()
        expect(region.get_by_role("button", name=button)).to_be_enabled()
        expect(region.get_by_text(flows.WORKING)).to_have_css("opacity", "0")
        page.unroute(f"{server}{path}")

    # The account section's buttons too.
    page.route(f"{server}/profile/sessions", hold)
    account = section(page, "Account")
    account.get_by_role("button", name="Sign out other sessions").click()
    expect(account.get_by_role("button", name="Sign out other sessions")).to_be_disabled()
    expect(account.get_by_text(flows.WORKING)).to_have_css("opacity", "1")
    flows.held_request(page, held).continue_()
    banner(account, "status", "All other sessions have been signed out.")


# -- unexpected failure, keyboard -------------------------------------------------------


def test_unexpected_failure_shows_the_generic_banner_in_the_section(
    page: Any, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.accounts import change_email as service

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("boom")

    flows.register_and_sign_in(page, server)
    monkeypatch.setattr(service, "change_email", broken)
    page.get_by_label("New password", exact=True).fill("typed elsewhere")
    em = section(page, "Change email")
    em.get_by_label("New email").fill("ada.new@example.com")
    em.get_by_label("Current password", exact=True).fill(PASSWORD)
    with page.expect_response(f"{server}/profile/email") as answer:
        em.get_by_role("button", name="Change email").click()
    assert answer.value.status == 500
    # static/app.js lets htmx swap the section's 500 answer, so the person sees why.
    banner(em, "alert", "Something went wrong. Please try again.")
    expect(em.get_by_label("New email")).to_be_enabled()
    assert page.get_by_label("New password", exact=True).input_value() == "typed elsewhere"
    expect(flows.current_email_line(page)).to_contain_text("ada@example.com")


def test_keyboard_only_use_keeps_focus_through_the_swaps(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    em = section(page, "Change email")
    em.get_by_label("New email").focus()
    page.keyboard.type("ada.keys@example.com")
    page.keyboard.press("Tab")
    expect(em.get_by_label("Current password", exact=True)).to_be_focused()
    page.keyboard.type("not my password at all")
    page.keyboard.press("Tab")
    button = em.get_by_role("button", name="Change email")
    expect(button).to_be_focused()
    outline = button.evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline != "none", "keyboard focus must be visible"

    # An error brings focus to the field to correct, as the browser's own checks do.
    page.keyboard.press("Enter")
    banner(em, "alert", "The current password is not correct.")
    expect(em.get_by_label("Current password", exact=True)).to_be_focused()
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")  # Enter in a field submits its form
    banner(em, "status", "Your email address has been changed.")
    expect(flows.current_email_line(page)).to_contain_text("ada.keys@example.com")
    # Success: focus goes back to where it was (the field, re-rendered and empty).
    expect(em.get_by_label("Current password", exact=True)).to_be_focused()

    # When the control is gone (Delete account becomes Cancel deletion), the next one.
    danger = section(page, "Danger zone")
    danger.get_by_label("Current password", exact=True).focus()
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    banner(danger, "status", "Your account will be deleted on")
    expect(danger.get_by_role("button", name="Cancel deletion")).to_be_focused()
    page.keyboard.press("Enter")
    banner(danger, "status", "Deletion cancelled.")
    expect(danger.get_by_role("button", name="Delete account")).to_be_focused()


def test_focus_is_not_taken_from_where_the_user_moved_it(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    held: list[Any] = []
    page.route(f"{server}/profile/password", lambda route: held.append(route))
    pw = section(page, "Change password")
    pw.get_by_label("Current password", exact=True).fill("not my password at all")
    pw.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    pw.get_by_label("Confirm new password").fill(NEW_PASSWORD)
    pw.get_by_role("button", name="Change password").click()
    expect(pw.get_by_role("button", name="Change password")).to_be_disabled()
    # While the request runs, the user moves on to another section.
    page.get_by_label("New email").focus()
    flows.held_request(page, held).continue_()
    banner(pw, "alert", "The current password is not correct.")
    # afterSettle ran. A locator, not wait_for_function: a string predicate that is not
    # true at once is re-evaluated with eval(), which the page's CSP refuses.
    expect(page.locator(".htmx-settling")).to_have_count(0)
    expect(page.get_by_label("New email")).to_be_focused()
    page.keyboard.type("still@here.example")
    expect(page.get_by_label("New email")).to_have_value("still@here.example")
