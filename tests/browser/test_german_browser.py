"""German: a German browser (Accept-Language de-DE) gets every page, banner and
mail in German; the stored language choice wins over the browser's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from babel.dates import format_date
from playwright.sync_api import expect

from tests.browser import flows
from tests.browser.flows import banner, section
from tests.support.accounts import NEW_PASSWORD, PASSWORD, body, mails

pytestmark = pytest.mark.browser


def test_german_browser_signs_up_and_uses_the_profile_in_german(
    new_page: Callable[..., Any], server: str, app: Any, work: Any, clock: Any
) -> None:
    page = new_page(locale="de-DE")
    flows.register(page, server, "ada@example.com", lang="de")
    assert flows.lang_of(page) == "de"
    expect(page.get_by_role("heading", level=1)).to_have_text("Bitte sehen Sie in Ihr Postfach")

    flows.verify_by_mail(page, server, app, work, "ada@example.com", lang="de")
    assert flows.subjects_to(app, "ada@example.com") == ["Bestätigen Sie Ihre E-Mail-Adresse"]
    flows.sign_in(page, server, "ada@example.com", lang="de")

    konto = section(page, "Konto")
    expect(konto).to_contain_text("Aktuelle E-Mail-Adresse: ada@example.com")
    expect(konto.get_by_test_id("profile-email-badge")).to_have_text("Bestätigt")
    expect(konto.get_by_label("Sprache")).to_have_value("de")
    for name in ("Passwort ändern", "E-Mail-Adresse ändern", "Gefahrenbereich"):
        expect(section(page, name)).to_be_visible()

    # The server's messages and the error summary speak German too.
    pw = section(page, "Passwort ändern")
    pw.get_by_label("Aktuelles Passwort", exact=True).fill(PASSWORD)
    pw.get_by_label("Neues Passwort", exact=True).fill(NEW_PASSWORD)
    pw.get_by_label("Neues Passwort bestätigen").fill(NEW_PASSWORD + "X")
    pw.get_by_role("button", name="Passwort ändern").click()
    banner(pw, "alert", "Die neuen Passwörter stimmen nicht überein.")
    expect(pw.get_by_role("heading", name="Es gibt ein Problem")).to_be_visible()
    expect(page).to_have_title("Fehler: Ihr Profil")
    expect(pw.locator(".field-error")).to_have_text(
        "Fehler: Die neuen Passwörter stimmen nicht überein."
    )

    pw.get_by_label("Aktuelles Passwort", exact=True).fill("nicht mein Passwort, sicher nicht")
    pw.get_by_label("Neues Passwort bestätigen").fill(NEW_PASSWORD)
    pw.get_by_role("button", name="Passwort ändern").click()
    banner(pw, "alert", "Das aktuelle Passwort ist nicht korrekt.")

    em = section(page, "E-Mail-Adresse ändern")
    em.get_by_label("Neue E-Mail-Adresse").fill("ada@example.com")
    em.get_by_label("Aktuelles Passwort", exact=True).fill(PASSWORD)
    em.get_by_role("button", name="E-Mail-Adresse ändern").click()
    banner(em, "alert", "Das ist bereits Ihre E-Mail-Adresse.")

    danger = section(page, "Gefahrenbereich")
    danger.get_by_label("Aktuelles Passwort", exact=True).fill(PASSWORD)
    danger.get_by_role("button", name="Konto löschen").click()
    date = format_date((clock.now() + timedelta(days=14)).date(), "long", locale="de")
    banner(danger, "status", f"Ihr Konto wird am {date} gelöscht.")
    work()  # the confirmation mail, in German, with the same date
    (notice,) = [m for m in mails(app) if m["Subject"] == "Ihr Konto wird gelöscht"]
    assert date in body(notice)
    danger.get_by_role("button", name="Löschung abbrechen").click()
    banner(danger, "status", "Löschung abgebrochen.")

    page.get_by_role("navigation", name="Main").get_by_role("button", name="Abmelden").click()
    banner(page, "status", "Sie wurden abgemeldet.")


def test_stored_language_wins_over_the_browser_language(
    new_page: Callable[..., Any], server: str
) -> None:
    # Registered from a German browser: German is stored with the account.
    german_browser = new_page(locale="de-DE")
    flows.register(german_browser, server, "ada@example.com", lang="de")
    english_browser = new_page(locale="en-US")
    english_browser.goto(f"{server}/login")
    assert flows.lang_of(english_browser) == "en"  # signed out: the browser's language
    flows.fill_sign_in(english_browser, "ada@example.com", lang="en")
    expect(english_browser.get_by_role("heading", level=1)).to_have_text("Ihr Profil")
    assert flows.lang_of(english_browser) == "de"

    # Choosing English there (htmx reloads the page) is stored and wins everywhere.
    konto = section(english_browser, "Konto")
    konto.get_by_label("Sprache").select_option(label="English")
    konto.get_by_role("button", name="Sprache speichern").click()
    banner(section(english_browser, "Account"), "status", "Your language has been saved.")
    assert flows.lang_of(english_browser) == "en"

    german_browser.goto(f"{server}/login")
    flows.fill_sign_in(german_browser, "ada@example.com", lang="de")
    expect(german_browser.get_by_role("heading", level=1)).to_have_text("Your profile")
    assert flows.lang_of(german_browser) == "en"
    expect(section(german_browser, "Account").get_by_label("Language")).to_have_value("en")
    # Signed out, the browser's language applies again.
    german_browser.get_by_role("navigation", name="Main").get_by_role(
        "button", name="Sign out"
    ).click()
    banner(german_browser, "status", "Sie wurden abgemeldet.")
    expect(german_browser.get_by_role("button", name="Anmelden", exact=True)).to_be_visible()
