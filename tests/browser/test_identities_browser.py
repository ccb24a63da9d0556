"""Sign in with an identity provider in real Chromium, against a real OpenID
Provider (idpyoidc's, tests/identities/op.py): the linking rule (an identity
whose address is an existing account's never signs in to it), and the
profile's Connected accounts section with htmx and without JavaScript, axe
clean in each state."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.browser.flows import banner, section
from tests.browser.live import serving
from tests.identities.op import Provider
from webapp.accounts.identities import protocol
from webapp.core.identity_providers import OIDC, ProviderSettings

pytestmark = pytest.mark.browser

SECRET = "client-secret-0123456789"
SECTION = "Connected accounts"


@pytest.fixture(scope="module")
def op() -> Iterator[Provider]:
    provider = Provider().start()
    yield provider
    provider.stop()


@pytest.fixture
def site(app: Any, op: Provider) -> Iterator[str]:
    """The app at http://localhost:PORT with Acme configured (OIDC_ACME_*)."""
    with serving(app) as srv:
        base = f"http://localhost:{srv.server_port}"
        acme = ProviderSettings("acme", OIDC, "Acme", "webapp", SECRET, issuer=op.issuer)
        protocol.forget(acme)
        op.add_client("webapp", SECRET, f"{base}/login/with/acme/callback")
        app.config["APP_CONFIG"] = dataclasses.replace(
            app.config["APP_CONFIG"], base_url=base, identity_providers=(acme,)
        )
        yield base


def test_an_existing_accounts_address_never_signs_in_to_it(
    new_page: Callable[..., Any], site: str, op: Provider
) -> None:
    owner = new_page()
    flows.register(owner, site, "ada@example.com")
    op.add_user("mallory", "ada@example.com")  # the provider vouches for ada's address
    op.user = "mallory"
    page = new_page(bypass_csp=True)
    page.goto(f"{site}/login")
    a11y.audit(page, "sign-in page with a provider")
    page.get_by_role("button", name="Continue with Acme").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("You already have an account")
    expect(page.get_by_role("alert")).to_contain_text(
        "An account with the address ada@example.com exists already"
    )
    a11y.audit(page, "an account exists for that address")
    page.goto(f"{site}/profile")
    page.wait_for_url(f"{site}/login?next=/profile")  # nobody is signed in


def _connect_and_disconnect(page: Any, site: str, op: Provider, htmx: bool) -> None:
    """Without JavaScript axe-core cannot run: the htmx run audits the states
    (the same templates render both)."""

    def audit(state: str) -> None:
        if htmx:
            a11y.audit(page, state)

    flows.register_and_sign_in(page, site)  # a fresh proof: the password, just given
    op.add_user("ada-acme", "ada.acme@example.com")
    op.user = "ada-acme"
    region = section(page, SECTION)
    expect(region.get_by_test_id("identities-none")).to_have_text("No connected accounts.")
    audit("connected accounts, none")
    region.get_by_role("button", name="Connect Acme").click()
    page.wait_for_url(f"{site}/profile#profile-connected")
    region = section(page, SECTION)
    banner(region, "status", "Acme connected. You can now sign in with it.")
    expect(region.get_by_test_id("identity-email")).to_have_text("ada.acme@example.com")
    audit("connected accounts, connected")
    if htmx:
        page.evaluate("window.stillHere = true")  # gone if the page reloads
    region.get_by_role("button", name="Disconnect Acme").click()
    region = section(page, SECTION)
    banner(region, "status", "Acme disconnected.")
    expect(region.get_by_test_id("identities-none")).to_be_visible()
    if htmx:
        assert page.evaluate("window.stillHere === true")  # only the section was swapped
        expect(flows.announced(page)).to_contain_text("Acme disconnected.")
    audit("connected accounts, disconnected (htmx)")


def test_connected_accounts_with_htmx(
    new_page: Callable[..., Any], site: str, op: Provider
) -> None:
    _connect_and_disconnect(new_page(bypass_csp=True), site, op, htmx=True)


def test_connected_accounts_without_javascript(
    new_page: Callable[..., Any], site: str, op: Provider
) -> None:
    _connect_and_disconnect(new_page(js=False), site, op, htmx=False)


def test_the_last_way_to_sign_in_stays(
    new_page: Callable[..., Any], site: str, op: Provider
) -> None:
    """Signed up through the provider (no password): disconnecting it is
    refused, saying what to add first; the error follows the one pattern."""
    op.add_user("carol", "carol@example.com")
    op.user = "carol"
    page = new_page(bypass_csp=True)
    page.goto(f"{site}/login")
    page.get_by_role("button", name="Continue with Acme").click()
    page.wait_for_url(f"{site}/profile")
    region = section(page, SECTION)
    region.get_by_role("button", name="Disconnect Acme").click()
    banner(region, "alert", "Acme is the only way to sign in to your account")
    expect(region.get_by_test_id("identity")).to_have_count(1)
    a11y.audit(page, "connected accounts, last way refused (htmx)")


def _set_a_password(page: Any, site: str, op: Provider, name: str, htmx: bool) -> None:
    op.add_user(name, f"{name}@example.com")
    op.user = name
    page.goto(f"{site}/login")
    page.get_by_role("button", name="Continue with Acme").click()
    page.wait_for_url(f"{site}/profile")
    region = section(page, "Set a password")
    expect(region.get_by_label("Current password")).to_have_count(0)
    if htmx:
        a11y.audit(page, "set a password")
        page.evaluate("window.stillHere = true")
    new = "tangerine submarine umbrella"
    region.get_by_label("New password", exact=True).fill(new)
    region.get_by_label("Confirm new password").fill(new)
    region.get_by_role("button", name="Set password").click()
    region = section(page, "Change password")
    banner(region, "status", "Password set.")
    expect(region.get_by_label("Current password")).to_be_visible()
    if htmx:
        assert page.evaluate("window.stillHere === true")  # only the section was swapped
        a11y.audit(page, "password set (htmx)")


def test_a_provider_only_account_sets_a_password_with_htmx(
    new_page: Callable[..., Any], site: str, op: Provider
) -> None:
    _set_a_password(new_page(bypass_csp=True), site, op, "dora", htmx=True)


def test_a_provider_only_account_sets_a_password_without_javascript(
    new_page: Callable[..., Any], site: str, op: Provider
) -> None:
    _set_a_password(new_page(js=False), site, op, "emil", htmx=False)
