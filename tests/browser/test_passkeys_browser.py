"""Passkeys in real Chromium (issue 21, point 2), with its virtual
authenticator (DevTools' WebAuthn domain through Playwright's CDP session:
CTAP2, resident keys, user verification): add a passkey from the profile,
sign out and sign in with it on /login without typing an address, remove it,
and then it signs nobody in. Under the app's real CSP (static/passkeys.js,
no inline script); without JavaScript the pages say passkeys need it and the
authenticator app is still offered; axe-core on each new page state.

WebAuthn takes its RP ID from BASE_URL's host, which must be the page's: the
server is reached as http://localhost:PORT (a secure context for browsers)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import banner, section
from tests.browser.live import serving

pytestmark = pytest.mark.browser

SECTION = "Two-step verification"


@pytest.fixture
def site(app: Any) -> Iterator[str]:
    with serving(app) as srv:
        base = f"http://localhost:{srv.server_port}"
        app.config["APP_CONFIG"] = dataclasses.replace(app.config["APP_CONFIG"], base_url=base)
        yield base


# Chromium's virtual authenticator answers a conditional (autofill) request at
# once, with nobody choosing, so /login would sign in by itself. The tests of
# the button run as a browser without passkey autofill (as Firefox before 119);
# test_passkey_autofill_browser.py has the autofill.
NO_AUTOFILL = "PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);"


def virtual_authenticator(page: Any, autofill: bool = False) -> tuple[Any, str]:
    """A platform authenticator for this page: the CDP session and its id.
    `autofill`: the browser offers passkeys in autofill (else it says it cannot)."""
    if not autofill:
        page.add_init_script(NO_AUTOFILL)
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, added["authenticatorId"]


def csp_errors(page: Any) -> list[str]:
    errors: list[str] = []
    page.on(
        "console",
        lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    return errors


def add_passkey(page: Any, name: str) -> Any:
    region = section(page, SECTION)
    region.get_by_label("Passkey name", exact=True).fill(name)
    region.get_by_role("button", name="Add a passkey").click()
    region = section(page, SECTION)
    banner(region, "status", f"Passkey “{name}” added.")
    return region


def sign_out(page: Any, site: str) -> None:
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url(f"{site}/login")


def test_add_sign_in_with_and_remove_a_passkey(new_page: Callable[..., Any], site: str) -> None:
    page = new_page()
    errors = csp_errors(page)
    cdp, authenticator = virtual_authenticator(page)
    flows.register_and_sign_in(page, site)
    region = add_passkey(page, "Laptop")
    expect(region.get_by_test_id("passkey-name")).to_have_text(["Laptop"])
    expect(region.get_by_test_id("passkey-last-used")).to_have_text(["Not used yet"])
    expect(region.get_by_test_id("recovery-codes").locator("code")).to_have_count(10)
    creds = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    assert len(creds) == 1 and creds[0]["isResidentCredential"]
    # The same authenticator again: the options exclude its passkey, the browser refuses.
    region.get_by_label("Passkey name", exact=True).fill("Laptop again")
    region.get_by_role("button", name="Add a passkey").click()
    banner(section(page, SECTION), "alert", "This passkey is already registered.")

    sign_out(page, site)
    expect(page.get_by_text("Signing in with a passkey needs JavaScript")).to_be_hidden()
    page.get_by_role("button", name="Sign in with a passkey").click()
    page.wait_for_url(f"{site}/profile")  # no address, no password typed
    region = section(page, SECTION)
    expect(region.get_by_test_id("passkey-last-used")).not_to_have_text(["Not used yet"])

    region.get_by_role("button", name="Remove Laptop").click()
    region = section(page, SECTION)
    banner(region, "status", "Passkey “Laptop” removed.")
    expect(region.get_by_test_id("passkeys-none")).to_be_visible()

    # The authenticator still holds it; the site no longer knows it.
    sign_out(page, site)
    page.get_by_role("button", name="Sign in with a passkey").click()
    banner(page, "alert", "This passkey is not registered here.")
    assert page.url.startswith(f"{site}/login/passkey")
    assert errors == []


def test_passkey_as_the_second_step_and_to_confirm_its_you(
    new_page: Callable[..., Any], site: str, clock: Any
) -> None:
    page = new_page(bypass_csp=True)  # axe-core is injected
    virtual_authenticator(page)
    flows.register_and_sign_in(page, site)
    a11y.audit(page, "profile, no passkey yet")
    add_passkey(page, "Phone")
    a11y.audit(page, "profile, a passkey added with its recovery codes")
    sign_out(page, site)
    a11y.audit(page, "login with the passkey button")
    flows.fill_sign_in(page, "ada@example.com")
    page.wait_for_url(f"{site}/login/passkey-step")  # only a passkey: asked for it
    expect(page.get_by_role("heading", level=1)).to_have_text("Confirm it's you with a passkey")
    a11y.audit(page, "second step with a passkey")
    page.get_by_role("button", name="Use your passkey").click()
    page.wait_for_url(f"{site}/profile")
    clock.advance(301)  # the proof of identity is stale now
    page.reload()
    region = section(page, SECTION)
    expect(region.get_by_role("button", name="Remove Phone")).to_have_count(0)
    a11y.audit(page, "profile, confirm it's you with a passkey")
    region.get_by_role("button", name="Use a passkey").click()
    region = section(page, SECTION)
    banner(region, "status", "Thank you.")
    expect(region.get_by_role("button", name="Remove Phone")).to_be_visible()


def test_without_javascript_passkeys_say_they_need_it(
    new_page: Callable[..., Any], site: str
) -> None:
    page = new_page(js=False)
    flows.register(page, site, "ada@example.com")
    page.goto(f"{site}/login")
    expect(page.get_by_text("Signing in with a passkey needs JavaScript")).to_be_visible()
    expect(page.get_by_role("button", name="Sign in with a passkey")).to_have_count(0)
    flows.sign_in(page, site, "ada@example.com")
    region = section(page, SECTION)
    expect(region.get_by_test_id("passkeys-noscript")).to_be_visible()
    expect(region.get_by_role("button", name="Add a passkey")).to_have_count(0)
    expect(region.get_by_role("button", name="Set up authenticator app")).to_be_visible()
