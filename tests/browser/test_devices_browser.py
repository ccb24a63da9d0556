"""In real Chromium: Your devices (issue 21, points 4 and 5). Signing out a
device from the list ends it at once (its next request lands on /login), with
and without JavaScript; the new-device mail reaches the local SMTP server for a
second browser context and not for the first; axe-core finds no violation in
any of the section's states."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import banner, section
from tests.mailserver import SmtpServer
from tests.support.accounts import PASSWORD, body

pytestmark = pytest.mark.browser

SIGN_OUT_ONE = re.compile(r"^Sign out HeadlessChrome \d+ \(Linux\)$")
SUBJECT = "Subject: New sign-in to your account"


def devices(page: Any) -> Any:
    return section(page, "Your devices")


def no_violations(page: Any, state: str) -> None:
    """axe-core: not one violation of any impact in this state (stricter than
    `a11y.audit`, which fails on serious and critical ones)."""
    a11y.audit(page, state)
    result = page.evaluate(
        """tags => axe.run(document, {runOnly: {type: "tag", values: tags},
                                      resultTypes: ["violations"]})""",
        a11y.AXE_TAGS,
    )
    assert [v["id"] for v in result["violations"]] == [], state


def lands_on_login(page: Any, server: str) -> None:
    page.goto(f"{server}/profile")
    page.wait_for_url(f"{server}/login?next=/profile")
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()


def test_sign_out_a_device_and_its_next_request_lands_on_login(
    new_page: Callable[..., Any], server: str, clock: Any
) -> None:
    page = new_page(bypass_csp=True)
    flows.register_and_sign_in(page, server)
    region = devices(page)
    expect(region.get_by_test_id("device")).to_have_count(1)
    expect(region.get_by_test_id("device-this")).to_have_text("This device")
    no_violations(page, "devices, only this one")

    phone = new_page()
    flows.sign_in(phone, server, "ada@example.com")
    page.reload()
    region = devices(page)
    expect(region.get_by_test_id("device")).to_have_count(2)
    expect(region.get_by_test_id("device-address").first).to_have_text("127.0.0.x")
    no_violations(page, "devices, two listed")

    clock.advance(301)  # the sign-in's proof is stale: the password step shows
    flows.no_navigation_marker(page)
    region.get_by_role("button", name=SIGN_OUT_ONE).click()
    password = region.get_by_label("Current password", exact=True)
    expect(password).to_be_focused()
    expect(region.get_by_test_id("devices-confirm")).to_contain_text("enter your current password")
    no_violations(page, "devices, proof step (htmx)")

    password.fill("not my password")
    region.get_by_role("button", name=SIGN_OUT_ONE).click()
    a11y.expect_errors(page, region, [("Current password", "The current password is not correct.")])
    no_violations(page, "devices, wrong password (htmx)")

    region.get_by_label("Current password", exact=True).fill(PASSWORD)
    region.get_by_role("button", name=SIGN_OUT_ONE).click()
    banner(region, "status", "The device is signed out.")
    expect(flows.announced(page)).to_have_text("The device is signed out.")
    expect(region.get_by_test_id("device")).to_have_count(1)
    assert flows.still_same_document(page)  # swapped, not reloaded
    no_violations(page, "devices, signed out (htmx)")

    lands_on_login(phone, server)
    page.reload()
    expect(devices(page).get_by_test_id("device")).to_have_count(1)  # this one stays


def test_sign_out_all_other_devices_without_javascript(
    new_page: Callable[..., Any], server: str, clock: Any
) -> None:
    page = new_page(js=False)
    flows.register_and_sign_in(page, server)
    others = [new_page(js=False), new_page()]
    for other in others:
        flows.sign_in(other, server, "ada@example.com")
    page.reload()
    region = devices(page)
    expect(region.get_by_test_id("device")).to_have_count(3)

    clock.advance(301)  # the sign-in's proof is stale: the password step shows
    with page.expect_response(f"{server}/profile/devices") as answer:
        region.get_by_role("button", name="Sign out all other devices").click()
    assert answer.value.request.headers.get("hx-request") is None  # a plain form post
    assert answer.value.status == 200 and "<html" in answer.value.text()
    region = devices(page)
    expect(region.get_by_test_id("devices-confirm")).to_have_text(
        "To sign out all other devices, enter your current password."
    )
    region.get_by_label("Current password", exact=True).fill(PASSWORD)
    with page.expect_response(f"{server}/profile/devices") as answer:
        region.get_by_role("button", name="Sign out all other devices").click()
    assert answer.value.status == 200
    banner(devices(page), "status", "All other devices are signed out.")
    expect(devices(page).get_by_test_id("devices-only-this")).to_be_visible()
    for other in others:
        lands_on_login(other, server)


def test_sign_out_one_device_without_javascript(
    new_page: Callable[..., Any], server: str, clock: Any
) -> None:
    page = new_page(js=False)
    flows.register_and_sign_in(page, server)
    phone = new_page(js=False)
    flows.sign_in(phone, server, "ada@example.com")
    clock.advance(301)  # the sign-in's proof is stale: the password step shows
    page.reload()
    devices(page).get_by_role("button", name=SIGN_OUT_ONE).click()
    page.wait_for_load_state()
    region = devices(page)
    region.get_by_label("Current password", exact=True).fill("")
    with page.expect_response(f"{server}/profile/devices") as answer:
        region.get_by_role("button", name=SIGN_OUT_ONE).click()
    assert answer.value.status == 422  # the error comes with the whole page
    region = devices(page)
    expect(region.get_by_text("Enter your current password.").first).to_be_visible()
    region.get_by_label("Current password", exact=True).fill(PASSWORD)
    region.get_by_role("button", name=SIGN_OUT_ONE).click()
    banner(devices(page), "status", "The device is signed out.")
    lands_on_login(phone, server)


def test_the_new_device_mail_arrives_for_a_second_browser_not_the_first(
    new_page: Callable[..., Any], server: str, app: Any, work: Any, smtp: SmtpServer
) -> None:
    first = new_page()
    flows.register_and_sign_in(first, server)
    first.get_by_role("button", name="Sign out", exact=True).click()
    first.wait_for_url(f"{server}/login")
    flows.sign_in(first, server, "ada@example.com")  # the same browser again
    work()
    assert not [b for b in smtp.inbox.bodies() if SUBJECT in b]

    second = new_page()
    flows.sign_in(second, server, "ada@example.com")
    work()
    alerts = [b for b in smtp.inbox.bodies() if SUBJECT in b]
    assert len(alerts) == 1
    mail = email.message_from_string(alerts[0], policy=email.policy.default)
    text = body(mail)
    assert mail["To"] == "ada@example.com"
    assert "Browser: HeadlessChrome" in text and "System: Linux" in text
    assert "Address: 127.0.0.x" in text
    assert "/profile#profile-devices" in text and "/reset-password" in text
