"""The privacy center in real Chromium: the export from request to unzipped
download (htmx polling, and without JavaScript the Refresh link), in German
once; activity paging; restriction and its lifting; signed-out deletion."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import flows
from tests.browser.flows import section
from tests.support.accounts import PASSWORD, user_row
from tests.support.workflows import run_events, runs
from webapp.accounts import language
from webapp.eventstore import projections

pytestmark = pytest.mark.browser

TEXT = {
    "en": {
        "privacy": "Privacy",
        "export": "Export your data",
        "request": "Request data export",
        "pending": "Your export is being prepared.",
        "ready": "Your export is ready.",
        "download": "Download export",
        "again": "Request a new export",
        "refresh": "Refresh",
    },
    "de": {
        "privacy": "Datenschutz",
        "export": "Ihre Daten exportieren",
        "request": "Datenexport anfordern",
        "pending": "Ihr Export wird vorbereitet.",
        "ready": "Ihr Export ist fertig.",
        "download": "Export herunterladen",
        "again": "Neuen Export anfordern",
        "refresh": "Aktualisieren",
    },
}
RESTRICTED = "Your account is restricted. Contact support to lift the restriction."


def _open_privacy(page: Any, lang: str = "en") -> None:
    page.get_by_role("link", name=TEXT[lang]["privacy"], exact=True).first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(TEXT[lang]["privacy"])


def _download(page: Any, region: Any, lang: str = "en") -> dict[str, Any]:
    with page.expect_download() as info:
        region.get_by_role("link", name=TEXT[lang]["download"]).click()
    download = info.value
    assert download.suggested_filename.startswith("data-export-")
    with zipfile.ZipFile(io.BytesIO(Path(download.path()).read_bytes())) as zf:
        assert sorted(zf.namelist()) == ["README.txt", "bundle.json"]
        data: dict[str, Any] = json.loads(zf.read("bundle.json"))
        return data


def test_export_request_polls_until_ready_then_downloads_the_users_data_only(
    page: Any, new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    other = new_page()
    flows.register_and_sign_in(other, server, "bob@example.com")
    flows.register_and_sign_in(page, server)
    _open_privacy(page)
    region = section(page, "Export your data")
    region.get_by_role("button", name="Request data export").click()
    expect(region.get_by_role("status")).to_have_text(TEXT["en"]["pending"])
    expect(region.get_by_role("button", name="Request data export")).to_have_count(0)
    expect(page.get_by_test_id("privacy-export")).to_have_attribute("hx-trigger", "every 2s")
    flows.no_navigation_marker(page)
    work()  # the worker builds the export; the section notices by itself
    # The next poll comes within 2 s; wait generously on a loaded machine.
    expect(region.get_by_text(TEXT["en"]["ready"])).to_be_visible(timeout=15_000)
    expect(region.get_by_text("Available until")).to_be_visible()
    expect(flows.announced(page)).to_have_text(TEXT["en"]["ready"])
    expect(page.get_by_test_id("privacy-export")).not_to_have_attribute("hx-trigger", "every 2s")
    expect(region.get_by_role("button", name="Request a new export")).to_be_visible()
    assert flows.still_same_document(page)
    data = _download(page, region)
    assert data["profile"]["email"] == "ada@example.com"
    assert data["events"][0]["payload"]["email"] == "ada@example.com"  # decrypted
    assert "user.export-requested" in [e["type"] for e in data["events"]]
    assert "bob@example.com" not in json.dumps(data)


def test_export_without_javascript_uses_the_refresh_link(
    new_page: Callable[..., Any], server: str, work: Any
) -> None:
    page = new_page(js=False)
    flows.register_and_sign_in(page, server)
    page.goto(f"{server}/privacy")
    region = section(page, "Export your data")
    region.get_by_role("button", name="Request data export").click()
    expect(region.get_by_role("status")).to_have_text(TEXT["en"]["pending"])
    work()
    region.get_by_role("link", name="Refresh").click()
    expect(region.get_by_text(TEXT["en"]["ready"])).to_be_visible()
    assert _download(page, region)["profile"]["email"] == "ada@example.com"


def test_export_in_german(new_page: Callable[..., Any], server: str, app: Any, work: Any) -> None:
    page = new_page(locale="de-DE")
    flows.register(page, server, "ute@example.com", lang="de")
    flows.sign_in(page, server, "ute@example.com", lang="de")
    _open_privacy(page, "de")
    region = section(page, TEXT["de"]["export"])
    region.get_by_role("button", name=TEXT["de"]["request"]).click()
    expect(region.get_by_role("status")).to_have_text(TEXT["de"]["pending"])
    work()
    expect(region.get_by_text(TEXT["de"]["ready"])).to_be_visible(timeout=15_000)
    expect(region.get_by_text("Verfügbar bis")).to_be_visible()
    assert _download(page, region, "de")["profile"]["language"] == "de"
    work()
    assert "Ihr Datenexport ist fertig" in flows.subjects_to(app, "ute@example.com")


def test_activity_in_plain_words_with_show_more(page: Any, server: str) -> None:
    flows.register_and_sign_in(page, server)
    ada = user_row("ada@example.com")
    for i in range(22):  # ends in English; keeps this browser signed in
        language.change_language(ada, "de" if i % 2 == 0 else "en")
        ada = user_row("ada@example.com")
    page.goto(f"{server}/privacy")
    region = section(page, "Your activity")
    items = region.get_by_test_id("privacy-activity-item")
    expect(items).to_have_count(20)
    expect(items.first).to_contain_text("Language changed")
    region.get_by_role("button", name="Show more").click()
    expect(items).to_have_count(24)
    expect(items.nth(20)).to_be_focused()  # reading goes on where the new entries start
    expect(items.last).to_contain_text("Account created")
    expect(region.get_by_role("button", name="Show more")).to_have_count(0)
    expect(region).not_to_contain_text("user.")


def test_restrict_signs_out_everywhere_and_lift_by_cli_lets_in_again(
    page: Any, new_page: Callable[..., Any], server: str, runner: Any
) -> None:
    flows.register_and_sign_in(page, server)
    elsewhere = new_page()
    flows.sign_in(elsewhere, server, "ada@example.com")
    page.goto(f"{server}/privacy")
    region = section(page, "Restrict processing")
    region.get_by_label("Current password").fill(PASSWORD)
    region.get_by_role("button", name="Restrict my account").click()
    page.wait_for_url(f"{server}/login")
    expect(page.get_by_text(RESTRICTED)).to_be_visible()
    elsewhere.goto(f"{server}/privacy")
    expect(elsewhere).to_have_url(f"{server}/login?next=/privacy")
    flows.fill_sign_in(elsewhere, "ada@example.com")
    expect(elsewhere.get_by_role("alert")).to_contain_text(RESTRICTED)
    lifted = runner.invoke(args=["users", "lift-restriction", "ada@example.com"])
    assert lifted.exit_code == 0, lifted.output
    flows.sign_in(page, server, "ada@example.com")


def test_signed_out_deletion_by_link_reuse_refused_then_cancel_after_sign_in(
    page: Any, new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    flows.register(page, server, "ada@example.com")
    page.goto(f"{server}/delete-account")
    page.get_by_label("Email", exact=True).fill("ada@example.com")
    page.get_by_role("button", name="Send confirmation link").click()
    expect(page.locator("[data-banner=success]")).to_have_text(
        "If an account exists for that address, we have sent a confirmation link."
    )
    work()
    (link,) = flows.links_to(app, "ada@example.com", "/delete-account/")
    page.goto(server + link)
    page.get_by_role("button", name="Confirm deletion").click()
    expect(page.locator("[data-banner=success]")).to_contain_text("Sign in to cancel.")
    page.goto(server + link)
    expect(page.get_by_role("alert")).to_have_text("This link is invalid or has expired.")
    flows.sign_in(page, server, "ada@example.com")
    _open_privacy(page)
    danger = page.get_by_test_id("privacy-delete")
    danger.get_by_role("button", name="Cancel deletion").click()
    flows.banner(danger, "status", "Deletion cancelled.")
    assert user_row("ada@example.com").status == "active"


def test_export_follows_its_run_live_and_shows_the_link_without_reload(
    page: Any, server: str, app: Any, work: Any
) -> None:
    flows.register_and_sign_in(page, server)
    _open_privacy(page)
    region = section(page, "Export your data")
    region.get_by_role("button", name="Request data export").click()
    expect(region.get_by_role("status")).to_have_text(TEXT["en"]["pending"])
    flows.no_navigation_marker(page)
    projections.run_all()  # the export's run starts; no worker has taken it yet
    # the next poll finds the run: the section follows it from now on
    expect(page.get_by_test_id("privacy-export-live")).to_be_attached(timeout=15_000)
    expect(page.get_by_test_id("privacy-export")).not_to_have_attribute("hx-trigger", "every 2s")
    page.evaluate(
        "window.__sse = []; document.body.addEventListener('htmx:sseMessage',"
        " e => window.__sse.push([e.detail.type, e.detail.data]))"
    )
    work()  # the worker builds the export, emitting its steps
    expect(region.get_by_text(TEXT["en"]["ready"])).to_be_visible(timeout=15_000)
    shown = page.evaluate("window.__sse")
    progress = [data for kind, data in shown if kind == "progress"]
    assert len(progress) == 2 and "Your data is collected." in progress[0]
    assert "The file is written." in progress[1]
    assert shown[-1][0] == "done"
    expect(region.get_by_role("link", name=TEXT["en"]["download"])).to_be_visible()
    assert flows.still_same_document(page)
    steps = [e.payload["name"] for e in _export_run_events() if e.type == "workflow.progress"]
    assert steps == ["export", "export"]


def _export_run_events() -> list[Any]:
    (run,) = runs("privacy-export")
    return run_events(run.run_id)
