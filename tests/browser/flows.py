"""What a person does in the browser, in English or German, found by role and label
(so every step also checks the accessible names). No fixtures here."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.support.accounts import PASSWORD, body, link_in, mails, make_admin

# The visible texts the flows look for, per page language.
TEXT = {
    "en": {
        "email": "Email",
        "password": "Password",
        "confirm": "Confirm password",
        "create": "Create account",
        "sent": "We have sent a message to {}",
        "sign_in": "Sign in",
        "sign_out": "Sign out",
        "verify": "Verify email address",
        "verified_banner": "Your email address has been verified.",
        "profile": "Your profile",
        "account": "Account",
        "password_section": "Change password",
        "email_section": "Change email",
        "danger": "Danger zone",
        "current_password": "Current password",
        "wrong_password": "The current password is not correct.",
        "delete": "Delete account",
        "cancel_deletion": "Cancel deletion",
        "deletion_cancelled": "Deletion cancelled.",
        "deleted_on": "Your account will be deleted on {}.",
        "verified": "Verified",
        "not_verified": "Not verified",
    },
    "de": {
        "email": "E-Mail",
        "password": "Passwort",
        "confirm": "Passwort bestätigen",
        "create": "Konto erstellen",
        "sent": "Wir haben eine Nachricht an {} gesendet",
        "sign_in": "Anmelden",
        "sign_out": "Abmelden",
        "verify": "E-Mail-Adresse bestätigen",
        "verified_banner": "Ihre E-Mail-Adresse wurde bestätigt.",
        "profile": "Ihr Profil",
        "account": "Konto",
        "password_section": "Passwort ändern",
        "email_section": "E-Mail-Adresse ändern",
        "danger": "Gefahrenbereich",
        "current_password": "Aktuelles Passwort",
        "wrong_password": "Das aktuelle Passwort ist nicht korrekt.",
        "delete": "Konto löschen",
        "cancel_deletion": "Löschung abbrechen",
        "deletion_cancelled": "Löschung abgebrochen.",
        "deleted_on": "Ihr Konto wird am {} gelöscht.",
        "verified": "Bestätigt",
        "not_verified": "Nicht bestätigt",
    },
}


def register(
    page: Any, server: str, address: str, password: str = PASSWORD, lang: str = "en"
) -> None:
    t = TEXT[lang]
    page.goto(f"{server}/register")
    page.get_by_label(t["email"], exact=True).fill(address)
    page.get_by_label(t["password"], exact=True).fill(password)
    page.get_by_label(t["confirm"], exact=True).fill(password)
    page.get_by_role("button", name=t["create"]).click()
    stored = address.lower()  # the page echoes the address as stored
    expect(page.get_by_role("status").filter(has_text=t["sent"].format(stored))).to_be_visible()


def sign_in(
    page: Any, server: str, address: str, password: str = PASSWORD, lang: str = "en"
) -> None:
    t = TEXT[lang]
    page.goto(f"{server}/login")
    fill_sign_in(page, address, password, lang)
    page.wait_for_url(f"{server}/profile")
    expect(page.get_by_role("heading", level=1)).to_have_text(t["profile"])


def fill_sign_in(page: Any, address: str, password: str = PASSWORD, lang: str = "en") -> None:
    t = TEXT[lang]
    page.get_by_label(t["email"], exact=True).fill(address)
    page.get_by_label(t["password"], exact=True).fill(password)
    page.get_by_role("button", name=t["sign_in"], exact=True).click()


def sign_in_admin(page: Any, server: str, address: str = "root@example.com") -> None:
    """Register `address`, make it an admin, sign in and open the console."""
    register(page, server, address)
    make_admin(address)
    sign_in(page, server, address)
    page.get_by_role("link", name="Admin").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Workflow runs")


def register_and_sign_in(page: Any, server: str, address: str = "ada@example.com") -> None:
    register(page, server, address)
    sign_in(page, server, address)


def section(page: Any, name: str) -> Any:
    """A profile section, found as the region its heading names."""
    return page.get_by_role("region", name=name, exact=True)


def banner(region: Any, role: str, text: str) -> Any:
    """Wait for the success banner ("status") or the error summary or banner
    ("alert") with `text` in `region`. A form's success banner is no live region
    itself (the page's persistent one announces it): it is found by its marker."""
    if role == "status":
        located = region.locator("[data-banner=success]").filter(has_text=text)
    else:
        located = region.get_by_role(role).filter(has_text=text)
    expect(located).to_be_visible()
    return located


def announced(page: Any) -> Any:
    """The page's persistent live region (role=status), where swaps write their message."""
    return page.get_by_test_id("live-status")


def links_to(app: Any, address: str, prefix: str) -> list[str]:
    """Paths of the `prefix` links in the mails to `address`, oldest first."""
    return [link_in(m, prefix) for m in mails(app) if m["To"] == address and prefix in body(m)]


def subjects_to(app: Any, address: str) -> list[str]:
    return [str(m["Subject"]) for m in mails(app) if m["To"] == address]


def verify_by_mail(
    page: Any, server: str, app: Any, work: Any, address: str, lang: str = "en"
) -> None:
    """Let the worker send the mail, open its link, confirm on the page."""
    t = TEXT[lang]
    work()
    links = links_to(app, address, "/verify-email/")
    assert links, f"no verification mail to {address} in the instance's mail folder"
    page.goto(server + links[-1])
    page.get_by_role("button", name=t["verify"]).click()
    banner(page, "status", t["verified_banner"])


def current_email_line(page: Any) -> Any:
    return page.get_by_test_id("profile-email-current")


def no_navigation_marker(page: Any) -> None:
    """Mark the loaded document; `still_same_document` fails if it was replaced."""
    page.evaluate("window.__sameDocument = true")


def still_same_document(page: Any) -> bool:
    return bool(page.evaluate("window.__sameDocument === true"))


def lang_of(page: Any) -> str:
    return str(page.locator("html").get_attribute("lang"))


WORKING = re.compile(r"Working|Wird bearbeitet")


def held_request(page: Any, held: list[Any], deadline_s: float = 10.0) -> Any:
    """The route a `page.route(..., held.append)` handler caught. The handler runs
    when Playwright next processes events, which may be after the button showed
    its busy state: wait (bounded) for it instead of assuming it ran already."""
    for _ in range(int(deadline_s / 0.05)):
        if held:
            return held.pop()
        page.wait_for_timeout(50)
    raise AssertionError("the request was never sent")
