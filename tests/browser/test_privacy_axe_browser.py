"""axe-core over the privacy center's page states (blank, preparing, ready,
errors, the signed-out deletion pages), htmx and full page; and the restrict
form's errors follow the one error pattern."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import section

pytestmark = pytest.mark.browser


def test_privacy_page_states(
    new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    page = new_page(bypass_csp=True)
    flows.register_and_sign_in(page, server)
    page.goto(f"{server}/privacy")
    a11y.audit(page, "privacy, blank")
    region = section(page, "Export your data")
    region.get_by_role("button", name="Request data export").click()
    expect(region.get_by_role("status")).to_have_text("Your export is being prepared.")
    a11y.audit(page, "privacy, export being prepared (htmx)")
    work()
    expect(region.get_by_text("Your export is ready.")).to_be_visible(timeout=15_000)
    # htmx settles the swapped section from the polling one's classes: let the
    # indicator finish fading out before measuring contrast.
    expect(region.locator(".htmx-indicator")).to_have_css("opacity", "0")
    a11y.audit(page, "privacy, export ready (htmx)")
    page.goto(f"{server}/privacy")
    a11y.audit(page, "privacy, export ready (page)")

    restrict = section(page, "Restrict processing")
    restrict.get_by_role("button", name="Restrict my account").click()
    a11y.expect_errors(page, restrict, [("Current password", "Enter your current password.")])
    a11y.audit(page, "privacy, restrict errors (htmx)")


def test_signed_out_deletion_pages(new_page: Callable[..., Any], server: str) -> None:
    page = new_page(bypass_csp=True)
    page.goto(f"{server}/delete-account")
    a11y.audit(page, "delete account, blank")
    page.get_by_role("button", name="Send confirmation link").click()
    expect(a11y.summary(page)).to_be_visible()
    a11y.audit(page, "delete account, errors")
    page.get_by_label("Email", exact=True).fill("nobody@example.com")
    page.get_by_role("button", name="Send confirmation link").click()
    expect(page.locator("[data-banner=success]")).to_be_visible()
    a11y.audit(page, "delete account, sent")
    page.goto(f"{server}/delete-account/not-a-token")
    expect(page.get_by_role("alert")).to_have_text("This link is invalid or has expired.")
    a11y.audit(page, "delete account, invalid link")
