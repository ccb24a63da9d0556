"""The authenticator app in real Chromium (issue 21, point 1): set it up from
the QR code's key shown on the page (the test computes codes from it as an
app would), save the recovery codes as .txt, sign in with a code and with a
recovery code, "Confirm it's you" when the proof is stale; with JavaScript
and without; axe-core on every new page state; the QR image loads under the
app's real CSP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyotp
import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import banner, section
from tests.support.accounts import PASSWORD
from webapp.core import clock as app_clock

pytestmark = pytest.mark.browser

SECTION = "Two-step verification"


def app_code(secret: str) -> str:
    """What the person's app shows now (the server's clock is the test's)."""
    return str(pyotp.TOTP(secret).at(app_clock.now()))


def set_up(page: Any, audit: bool = False) -> tuple[str, list[str]]:
    region = section(page, SECTION)
    region.get_by_role("button", name="Set up authenticator app").click()
    expect(region.get_by_role("img", name="QR code that adds this account")).to_be_visible()
    if audit:
        a11y.audit(page, "factors, set-up with QR code")
    secret = region.get_by_test_id("totp-secret").inner_text().replace(" ", "")
    assert len(secret) == 32
    region.get_by_label("Authentication code", exact=True).fill(
        "000000" if app_code(secret) != "000000" else "111111"
    )
    region.get_by_role("button", name="Confirm").click()
    banner(section(page, SECTION), "alert", "That code is not right")
    if audit:
        a11y.audit(page, "factors, set-up with a wrong code")
    region = section(page, SECTION)
    region.get_by_label("Authentication code", exact=True).fill(app_code(secret))
    region.get_by_role("button", name="Confirm").click()
    region = section(page, SECTION)
    banner(region, "status", "Authenticator app added.")
    codes = region.get_by_test_id("recovery-codes").locator("code").all_inner_texts()
    assert len(codes) == 10
    return secret, codes


def sign_in_with_code(page: Any, server: str, secret: str, clock: Any, audit: bool = False) -> None:
    page.goto(f"{server}/login")
    flows.fill_sign_in(page, "ada@example.com")
    page.wait_for_url(f"{server}/login/code")
    expect(page.get_by_role("heading", level=1)).to_have_text("Enter your code")
    if audit:
        a11y.audit(page, "sign-in, code asked")
    clock.advance(30)  # the set-up spent this time-step's code
    page.get_by_label("Authentication code", exact=True).fill(app_code(secret))
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{server}/profile")


def test_set_up_sign_in_and_recovery_with_javascript(
    new_page: Callable[..., Any], server: str, clock: Any, tmp_path: Path
) -> None:
    page = new_page(bypass_csp=True)
    flows.register_and_sign_in(page, server)
    a11y.audit(page, "profile with the factors section, off")
    secret, codes = set_up(page, audit=True)
    a11y.audit(page, "factors, recovery codes shown once")
    with page.expect_download() as info:
        section(page, SECTION).get_by_role("button", name="Download as .txt").click()
    download = info.value
    assert download.suggested_filename == "recovery-codes.txt"
    saved = tmp_path / "codes.txt"
    download.save_as(saved)
    assert saved.read_text().splitlines()[2:] == codes

    page.get_by_role("button", name="Sign out", exact=True).click()
    page.goto(f"{server}/login")
    flows.fill_sign_in(page, "ada@example.com")
    page.wait_for_url(f"{server}/login/code")
    page.get_by_label("Authentication code", exact=True).fill("12")
    page.get_by_role("button", name="Continue").click()
    a11y.expect_errors(
        page,
        page,
        [("Authentication code", "Enter the 6-digit code from your authenticator app.")],
        hints={"Authentication code": "The 6-digit code your authenticator app shows now."},
    )
    a11y.audit(page, "sign-in, code with an error")
    page.get_by_role("link", name="Use a recovery code instead").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Use a recovery code")
    a11y.audit(page, "sign-in, recovery code asked")
    page.get_by_label("Recovery code", exact=True).fill(codes[0])
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{server}/profile")
    expect(section(page, SECTION).get_by_test_id("codes-left")).to_have_text(
        "9 of 10 recovery codes left."
    )
    a11y.audit(page, "profile with the factors section, on")

    page.get_by_role("button", name="Sign out", exact=True).click()
    sign_in_with_code(page, server, secret, clock, audit=True)

    clock.advance(301)  # the proof of the sign-in is stale now
    page.reload()
    region = section(page, SECTION)
    expect(region.get_by_role("heading", name="Confirm it's you")).to_be_visible()
    expect(region.get_by_role("button", name="Generate new codes")).to_have_count(0)
    a11y.audit(page, "factors, confirm it's you")
    region.get_by_label("Password", exact=True).fill("not my password at all")
    region.get_by_role("button", name="Confirm it's me").click()
    banner(section(page, SECTION), "alert", "The current password is not correct.")
    a11y.audit(page, "factors, confirm it's you with an error")
    region = section(page, SECTION)
    region.get_by_label("Or a code from your authenticator app", exact=True).fill(app_code(secret))
    region.get_by_role("button", name="Confirm it's me").click()
    banner(section(page, SECTION), "status", "You can now change how you sign in.")
    section(page, SECTION).get_by_role("button", name="Generate new codes").click()
    banner(section(page, SECTION), "status", "The old ones no longer work.")

    region = section(page, SECTION)
    clock.advance(30)
    region.get_by_label("Current password", exact=True).fill(PASSWORD)
    region.get_by_label("Code from the app, or a recovery code", exact=True).fill(app_code(secret))
    region.get_by_role("button", name="Turn off").click()
    banner(section(page, SECTION), "status", "Authenticator app turned off.")
    a11y.audit(page, "factors, turned off")


def test_without_javascript(new_page: Callable[..., Any], server: str, clock: Any) -> None:
    page = new_page(js=False)
    flows.register_and_sign_in(page, server)
    secret, codes = set_up(page)
    expect(page.get_by_role("heading", level=1)).to_have_text("Your profile")  # a whole page
    page.get_by_role("button", name="Sign out", exact=True).click()
    sign_in_with_code(page, server, secret, clock)
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.goto(f"{server}/login")
    flows.fill_sign_in(page, "ada@example.com")
    page.get_by_role("link", name="Use a recovery code instead").click()
    page.get_by_label("Recovery code", exact=True).fill(codes[4])
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{server}/profile")


def test_the_qr_code_loads_under_the_real_csp(
    new_page: Callable[..., Any], server: str, clock: Any
) -> None:
    page = new_page()  # no bypass: the app's own Content-Security-Policy applies
    refused: list[str] = []
    page.on(
        "console",
        lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None,
    )
    flows.register_and_sign_in(page, server)
    section(page, SECTION).get_by_role("button", name="Set up authenticator app").click()
    qr = section(page, SECTION).get_by_test_id("totp-qr")
    expect(qr).to_be_visible()
    assert qr.evaluate("img => img.complete && img.naturalWidth > 100")
    assert not refused, refused
