"""The console in German (navigation and headings) and under axe-core: every
console page, with data, blank and with errors, has no serious or critical
violation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.helpers import append_one, projection
from tests.support.accounts import make_admin
from tests.support.workflows import only_run
from webapp.eventstore import projections

pytestmark = pytest.mark.browser

ADMIN = "root@example.com"


def _fail(_conn: Any, _event: Any) -> None:
    raise LookupError("missing")


def test_german_navigation_and_headings(
    new_page: Callable[..., Any], server: str, work: Any
) -> None:
    page = new_page(locale="de-DE")
    flows.register(page, server, ADMIN, lang="de")
    make_admin(ADMIN)
    flows.sign_in(page, server, ADMIN, lang="de")
    work()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Admin").click()
    console = page.get_by_role("navigation", name="Betriebskonsole")
    headings = {
        "Workflow-Läufe": "Workflow-Läufe",
        "Hängende Läufe": "Hängende Läufe",
        "Projektionen": "Projektionen",
        "Warteschlangen": "Warteschlangen",
    }
    for link, heading in headings.items():
        console.get_by_role("link", name=link).click()
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    console.get_by_role("link", name="Workflow-Läufe").click()
    expect(page.get_by_label("Status")).to_be_visible()
    expect(page.get_by_role("button", name="Filter anwenden")).to_be_visible()
    expect(page.get_by_test_id("admin-run-counts")).to_contain_text("Wartet: 1")
    page.get_by_role("link", name=only_run("email-verification-registered").run_id).click()
    for name in ("Ausstehendes Warten", "Verlauf", "Gespeicherte Ergebnisse"):
        expect(page.get_by_role("heading", name=name)).to_be_visible()
    page.get_by_role("link", name="Lauf abbrechen").click()
    expect(page.get_by_role("heading", name="Diesen Lauf abbrechen?")).to_be_visible()
    console.get_by_role("link", name="Workflow-Läufe").click()
    page.get_by_role("link", name="Passende Läufe abbrechen").click()
    expect(page.get_by_role("heading", name="1 Lauf abbrechen?")).to_be_visible()
    expect(page.get_by_role("button", name="Ja, abbrechen")).to_be_visible()


def test_console_pages_pass_axe(new_page: Callable[..., Any], server: str, work: Any) -> None:
    page = new_page(bypass_csp=True)
    flows.register(page, server, ADMIN)
    make_admin(ADMIN)
    flows.sign_in(page, server, ADMIN)
    work()
    with projection("test-prices", ["price.changed"], _fail):
        append_one("price.changed")
        projections.run_all(max_attempts=1)
        run_id = only_run("email-verification-registered").run_id
        for path, state in [
            ("/admin/runs", "runs"),
            ("/admin/runs?status=bogus", "runs, errors"),
            ("/admin/runs?status=failed", "runs, none"),
            (f"/admin/runs/{run_id}", "run"),
            (f"/admin/runs/{run_id}/cancel", "confirm cancel"),
            ("/admin/bulk/cancel?status=waiting", "bulk confirm"),
            ("/admin/bulk/cancel?status=bogus", "bulk, bad filter"),
            ("/admin/bulk/cancel?status=failed", "bulk, nothing matches"),
            ("/admin/stuck", "stuck"),
            ("/admin/projections", "projections, parked"),
            ("/admin/queues", "queues"),
        ]:
            page.goto(server + path)
            a11y.audit(page, state)
        page.goto(f"{server}/admin/runs/{run_id}")
        page.get_by_role("link", name="Cancel run").click()
        expect(page.get_by_test_id("admin-confirm")).to_be_visible()
        a11y.audit(page, "confirm in place (htmx)")
        page.goto(f"{server}/admin/runs?status=waiting")
        page.get_by_role("link", name="Cancel matching runs").click()
        expect(page.get_by_test_id("admin-confirm")).to_be_visible()
        a11y.audit(page, "bulk confirm in place (htmx)")
        # API tokens: create one, then Revoke asks in place before it revokes.
        page.goto(f"{server}/admin/api-tokens")
        a11y.audit(page, "api tokens, none")
        page.get_by_label("Name").fill("storefront")
        page.get_by_label("runs:read").check()
        page.get_by_role("button", name="Create token").click()
        expect(page.get_by_test_id("admin-token-secret")).to_be_visible()
        a11y.audit(page, "api tokens, secret shown")
        page.get_by_role("link", name="Revoke the token storefront").click()
        expect(page.get_by_role("heading", name="Revoke the token storefront?")).to_be_visible()
        a11y.audit(page, "api token revoke confirm (htmx)")
        page.get_by_test_id("admin-confirm-submit").click()
        expect(
            page.get_by_test_id("admin-tokens").get_by_text("Token storefront revoked")
        ).to_be_visible()
        expect(page.locator("[data-token-id]")).to_contain_text("revoked")
