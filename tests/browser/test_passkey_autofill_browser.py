"""Passkey autofill in real Chromium (docs/accounts.md, "Passkey autofill"):
the email field on /login is `autocomplete="username webauthn"` and the page
starts a WebAuthn conditional-mediation request at load; with Chromium's
virtual authenticator (DevTools' WebAuthn domain, as in
test_passkeys_browser.py) that request resolves to a sign-in, `next` kept.
Headless Chromium has no autofill menu to click: with the virtual
authenticator it answers a conditional request at once with the saved
passkey, as a person choosing it would. With no passkey saved the request
stays pending, and then "Sign in with a passkey" must abort it before its own
request (Chromium refuses a second request while one is pending): the button
still signs in, with the button's challenge."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.live import serving
from tests.browser.test_passkeys_browser import add_passkey, csp_errors, virtual_authenticator

pytestmark = pytest.mark.browser


@pytest.fixture
def site(app: Any) -> Iterator[str]:
    """The app at http://localhost:PORT, its BASE_URL (the passkeys' RP ID)."""
    with serving(app) as srv:
        base = f"http://localhost:{srv.server_port}"
        app.config["APP_CONFIG"] = dataclasses.replace(app.config["APP_CONFIG"], base_url=base)
        yield base


MEDIATION = re.compile(r'name="mediation"\r\n\r\n([a-z]*)\r\n')


def mediation_of(request: Any) -> str | None:
    """The `mediation` field a passkey request posted ("" for the button)."""
    data = request.post_data or ""
    found = MEDIATION.search(data)
    if found:
        return found.group(1)
    form = dict(p.split("=", 1) for p in data.split("&") if "=" in p)
    return form.get("mediation")


def passkey_posts(page: Any) -> list[tuple[str, str | None]]:
    """Every POST to the passkey sign-in endpoints: (path, mediation)."""
    seen: list[tuple[str, str | None]] = []

    def note(request: Any) -> None:
        path = request.url.split("localhost:", 1)[1].partition("/")[2].split("?")[0]
        if request.method == "POST" and path.startswith("login/passkey"):
            seen.append(("/" + path, mediation_of(request)))

    page.on("request", note)
    return seen


def with_saved_passkey(page: Any, site: str) -> tuple[Any, Any, str]:
    cdp, authenticator = virtual_authenticator(page, autofill=True)
    flows.register_and_sign_in(page, site)
    add_passkey(page, "Laptop")
    return page, cdp, authenticator


def test_a_passkey_chosen_in_the_email_fields_autofill_signs_in(
    new_page: Callable[..., Any], site: str
) -> None:
    page, cdp, authenticator = with_saved_passkey(new_page(), site)
    errors = csp_errors(page)
    posts = passkey_posts(page)
    page.get_by_role("button", name="Sign out", exact=True).click()
    # /login loads, its autofill request is answered with the saved passkey: signed in.
    page.wait_for_url(f"{site}/profile")
    assert posts == [("/login/passkey/options", "conditional"), ("/login/passkey", "conditional")]
    expect(page.get_by_test_id("passkey-last-used")).not_to_have_text(["Not used yet"])

    # With `next`: no passkey in the authenticator while signing out, so /login stays.
    (saved,) = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})[
        "credentials"
    ]
    cdp.send("WebAuthn.clearCredentials", {"authenticatorId": authenticator})
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url(f"{site}/login")
    field = page.get_by_label("Email", exact=True)
    expect(field).to_have_attribute("autocomplete", "username webauthn")
    assert page.evaluate("PublicKeyCredential.isConditionalMediationAvailable()") is True
    cdp.send("WebAuthn.addCredential", {"authenticatorId": authenticator, "credential": saved})
    page.goto(f"{site}/login?next=/privacy")
    page.wait_for_url(f"{site}/privacy")
    assert posts[-1] == ("/login/passkey", "conditional")
    assert errors == []


def test_the_button_aborts_a_pending_autofill_request_and_signs_in(
    new_page: Callable[..., Any], site: str
) -> None:
    page, cdp, authenticator = with_saved_passkey(new_page(bypass_csp=True), site)  # axe
    (saved,) = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})[
        "credentials"
    ]
    cdp.send("WebAuthn.clearCredentials", {"authenticatorId": authenticator})
    posts = passkey_posts(page)
    with page.expect_response(lambda r: r.url.endswith("/login/passkey/options")):
        page.get_by_role("button", name="Sign out", exact=True).click()
    flows.no_navigation_marker(page)
    # The autofill request is pending (the authenticator has nothing to offer
    # yet: Chromium waits, as for a person who has not chosen); the passkey
    # comes back, and the person clicks the button instead.
    page.wait_for_timeout(300)
    assert posts == [("/login/passkey/options", "conditional")]
    a11y.audit(page, "sign-in page, a passkey autofill request pending")
    assert flows.still_same_document(page)
    cdp.send("WebAuthn.addCredential", {"authenticatorId": authenticator, "credential": saved})
    page.get_by_role("button", name="Sign in with a passkey").click()
    page.wait_for_url(f"{site}/profile")
    assert posts[1:] == [("/login/passkey/options", ""), ("/login/passkey", "")]
