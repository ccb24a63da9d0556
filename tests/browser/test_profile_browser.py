"""The profile screen in a real browser: htmx swaps only the section."""

from __future__ import annotations

from typing import Any

import pytest

from tests.accounts.conftest import PASSWORD

pytestmark = pytest.mark.browser


def _register_and_sign_in(page: Any, server: str) -> None:
    page.goto(f"{server}/register")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Confirm password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.get_by_text("We have sent a message to ada@example.com").wait_for()
    page.goto(f"{server}/login")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server}/profile")


def test_password_error_swaps_only_its_section(page: Any, server: str) -> None:
    _register_and_sign_in(page, server)
    page.get_by_label("New email").fill("typed@example.com")  # state elsewhere
    section = page.get_by_test_id("profile-password")
    section.get_by_label("Current password", exact=True).fill("not my password at all")
    section.get_by_label("New password", exact=True).fill("tangerine submarine umbrella")
    section.get_by_label("Confirm new password").fill("tangerine submarine umbrella")
    section.get_by_role("button", name="Change password").click()
    section = page.get_by_test_id("profile-password")
    section.get_by_role("alert").filter(has_text="The current password is not correct.").wait_for()
    assert page.get_by_label("New email").input_value() == "typed@example.com"


def test_mismatch_is_caught_before_sending(page: Any, server: str) -> None:
    _register_and_sign_in(page, server)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if r.method == "POST" else None)
    section = page.get_by_test_id("profile-password")
    section.get_by_label("Current password", exact=True).fill(PASSWORD)
    section.get_by_label("New password", exact=True).fill("tangerine submarine umbrella")
    section.get_by_label("Confirm new password").fill("tangerine submarine umbrellX")
    section.get_by_role("button", name="Change password").click()
    section.get_by_role("alert").filter(has_text="The new passwords do not match.").wait_for()
    assert requests == []


def test_email_change_updates_current_line_out_of_band(page: Any, server: str) -> None:
    _register_and_sign_in(page, server)
    section = page.get_by_test_id("profile-email")
    section.get_by_label("New email").fill("ada.new@example.com")
    section.get_by_label("Current password", exact=True).fill(PASSWORD)
    section.get_by_role("button", name="Change email").click()
    page.get_by_test_id("profile-email").get_by_role("status").filter(
        has_text="Your email address has been changed."
    ).wait_for()
    assert "ada.new@example.com" in page.get_by_test_id("profile-email-current").inner_text()
