"""The operations console in real Chromium: an admin finds a failed run by
filter, retries it and sees it complete; cancels a waiting run (with and without
JavaScript); retries a parked event once its cause is fixed; sees scheduler
entries go missing after Redis is flushed and come back."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from redis import Redis
from rq_scheduler import Scheduler

import webapp.workflows as wf
from tests.browser import flows
from tests.helpers import append_one, projection
from tests.support.workflows import emit, only_run
from webapp.core.config import ROOT
from webapp.eventstore import projections
from worker.run_scheduler import ScheduleKeeper

pytestmark = pytest.mark.browser

ADMIN = "root@example.com"
# The docs' screenshots are taken here; they are written into docs/img only when
# asked (UPDATE_SCREENSHOTS=1), so a test run leaves the checkout unchanged.
SHOTS = ROOT / "docs" / "img" if os.environ.get("UPDATE_SCREENSHOTS") else None
CAUSE = {"fixed": False}


def charge(_ctx: Any) -> str:
    if not CAUSE["fixed"]:
        raise RuntimeError("the payment provider is down")
    return "charged"


def sign_in_admin(page: Any, server: str) -> None:
    flows.sign_in_admin(page, server, ADMIN)


def status_of(page: Any) -> Any:
    return page.get_by_test_id("admin-run-status")


def test_find_a_failed_run_by_filter_retry_it_and_it_completes(
    page: Any,
    server: str,
    tmp_path: Path,
    use_workflow: Any,  # noqa: F811
    work: Any,
) -> None:
    CAUSE["fixed"] = False
    use_workflow(wf.workflow("charge", on="order.placed", steps=[wf.compute("charge", charge)]))
    emit("order.placed", {"orderId": "o-1"})
    work()
    sign_in_admin(page, server)
    work()  # the admin's own verification run waits: the list has more than one run
    page.get_by_label("Status").select_option(label="Failed")
    page.get_by_role("button", name="Apply filters").click()
    table = page.get_by_test_id("admin-runs")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator("tbody tr")).to_contain_text("Failed")
    run_id = only_run("charge").run_id
    table.get_by_role("link", name=run_id).click()

    run = page.get_by_test_id("admin-run")
    expect(status_of(page)).to_have_text("Failed")
    timeline = run.get_by_test_id("admin-run-timeline")
    expect(timeline).to_contain_text("workflow.run-started")
    expect(timeline).to_contain_text("workflow.run-failed")
    expect(timeline).to_contain_text("workflow step failed (RuntimeError)")
    CAUSE["fixed"] = True
    run.get_by_role("link", name="Retry run").click()
    confirm = page.get_by_test_id("admin-confirm")
    expect(confirm.get_by_role("heading")).to_have_text("Retry this run?")
    expect(status_of(page)).to_have_text("Failed")  # asking changes nothing
    confirm.get_by_role("button", name="Retry run").click()
    flows.banner(page.get_by_test_id("admin-run"), "status", "Run retried")
    work()
    page.reload()
    expect(status_of(page)).to_have_text("Completed")
    expect(page.get_by_test_id("admin-run-results")).to_contain_text('"charged"')
    page.set_viewport_size({"width": 1280, "height": 800})
    shots = SHOTS or tmp_path
    page.screenshot(path=str(shots / "admin-run.png"), full_page=True)

    page.get_by_role("navigation", name="Operations console").get_by_role(
        "link", name="Workflow runs"
    ).click()
    expect(page.get_by_test_id("admin-run-counts")).to_contain_text("Completed: 1")
    page.screenshot(path=str(shots / "admin-runs.png"), full_page=True)


def _cancel_waiting_run(page: Any, server: str, work: Any) -> None:
    sign_in_admin(page, server)
    work()  # the verification reminder run starts and waits for user.email-verified
    page.reload()
    page.get_by_role("link", name="Waiting: 1").click()
    table = page.get_by_test_id("admin-runs")
    run_id = only_run("email-verification-registered").run_id
    table.get_by_role("link", name=run_id).click()
    expect(status_of(page)).to_have_text("Waiting")
    expect(page.get_by_test_id("admin-run-match")).to_contain_text(
        'user_id = "' + only_run("email-verification-registered").subject_id + '"'
    )
    page.get_by_role("link", name="Cancel run").click()
    confirm = page.get_by_test_id("admin-confirm")
    expect(confirm.get_by_role("heading")).to_have_text("Cancel this run?")
    confirm.get_by_role("button", name="Cancel run").click()
    flows.banner(page.get_by_test_id("admin-run"), "status", "Run cancelled.")
    expect(status_of(page)).to_have_text("Cancelled")
    expect(page.get_by_role("link", name="Cancel run")).to_have_count(0)
    assert only_run("email-verification-registered").status == "cancelled"


def test_cancel_a_waiting_run(page: Any, server: str, work: Any) -> None:
    _cancel_waiting_run(page, server, work)


def test_cancel_a_waiting_run_without_javascript(
    new_page: Callable[..., Any], server: str, work: Any
) -> None:
    page = new_page(js=False)
    _cancel_waiting_run(page, server, work)
    assert page.url.endswith("/cancel")  # a real confirm page and a real form post


def test_retry_a_parked_event_after_fixing_its_cause(page: Any, server: str) -> None:
    cause = {"fixed": False}

    def apply(_conn: Any, _event: Any) -> None:
        if not cause["fixed"]:
            raise LookupError("the price list is missing")

    with projection("test-prices", ["price.changed"], apply):
        append_one("price.changed")
        assert projections.run_all(max_attempts=1).parked == 1
        sign_in_admin(page, server)
        page.get_by_role("link", name="Projections").click()
        parked = page.get_by_test_id("admin-parked")
        expect(parked.locator("tbody tr")).to_contain_text("price.changed")
        expect(parked.locator("tbody tr")).to_contain_text("LookupError")
        parked.get_by_role("button", name="Retry").click()  # not fixed yet
        expect(parked.get_by_role("alert")).to_contain_text("failed again; it stays parked")
        expect(parked.locator("tbody tr")).to_contain_text("2")  # attempts counted
        cause["fixed"] = True
        parked.get_by_role("button", name="Retry").click()
        flows.banner(parked, "status", "The parked event was applied.")
        expect(page.get_by_test_id("admin-parked-empty")).to_be_visible()


def test_missing_scheduler_entry_after_a_redis_flush_comes_back(
    page: Any, server: str, redis: Redis
) -> None:
    keeper = ScheduleKeeper(Scheduler(connection=redis), 15, on_restored=lambda: None)
    keeper.check_schedule()  # the scheduler's start-up sync
    sign_in_admin(page, server)
    page.get_by_role("link", name="Queues").click()
    schedule = page.get_by_test_id("admin-schedule")
    entry = schedule.locator("tr[data-entry=interval-dispatch-sweep]")
    expect(entry).to_contain_text("UTC")
    expect(page.get_by_test_id("admin-schedule-missing")).to_have_count(0)
    redis.flushdb()  # Redis lost its data
    page.reload()
    expect(entry).to_contain_text("Missing")
    expect(page.get_by_test_id("admin-schedule-missing")).to_contain_text(
        "The scheduler restores them within 15 seconds."
    )
    keeper.check_schedule()  # the scheduler's next resync (SCHEDULER_RESYNC_SECONDS)
    page.reload()
    expect(entry).to_contain_text("UTC")
    expect(page.get_by_test_id("admin-schedule-missing")).to_have_count(0)
