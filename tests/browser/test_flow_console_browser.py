"""Flow control in the operations console, in real Chromium (issue 18): a
queued run shows its key and queue position; pausing a workflow queues its
new runs until it is resumed; a failed run is rerun from a step; every run of
a filter is cancelled after a confirmation that shows the count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

import webapp.workflows as wf
from tests.browser import flows
from tests.support.workflows import emit, run_events, runs
from webapp.workflows.store import run_events as ev

pytestmark = pytest.mark.browser

BROKEN = {"yes": True}


def customer(event: Any) -> str:
    return str(event.payload["customerId"])


def flaky(_ctx: Any) -> int:
    if BROKEN["yes"]:
        raise RuntimeError("the ledger is down")
    return 2


def run_by_trigger(name: str, aggregate_id: str) -> Any:
    return next(r for r in runs(name) if r.trigger_event_ref["aggregateId"] == aggregate_id)


def filter_by_workflow(page: Any, name: str) -> None:
    page.get_by_label("Workflow").fill(name)
    page.get_by_role("button", name="Apply filters").click()


def status_of(page: Any) -> Any:
    return page.get_by_test_id("admin-run-status")


def test_a_queued_run_shows_its_key_and_queue_position(
    page: Any, server: str, use_workflow: Any, work: Any
) -> None:
    use_workflow(
        wf.workflow(
            "sync",
            on="sync.requested",
            concurrency=wf.limit(max=1, key=customer),
            steps=[wf.wait("hold", "PT1H"), wf.ret(1)],
        )
    )
    emit("sync.requested", {"customerId": "acme"}, "s1")
    emit("sync.requested", {"customerId": "acme"}, "s2")
    work()
    flows.sign_in_admin(page, server)
    filter_by_workflow(page, "sync")
    second = run_by_trigger("sync", "s2").run_id
    row = page.get_by_test_id("admin-runs").locator(f"tr[data-run-id='{second}']")
    expect(row).to_contain_text("Queued")
    expect(row.get_by_test_id("admin-runs-queue")).to_have_text(
        "key acme · position 1 · priority 3"
    )
    first = page.get_by_test_id("admin-runs").locator(
        f"tr[data-run-id='{run_by_trigger('sync', 's1').run_id}']"
    )
    expect(first).to_contain_text("Waiting")
    expect(first.get_by_test_id("admin-runs-queue")).to_have_text("")
    row.get_by_role("link", name=second).click()
    expect(status_of(page)).to_have_text("Queued")
    expect(page.get_by_test_id("admin-run-queue")).to_have_text(
        "key acme · position 1 · priority 3"
    )
    expect(page.get_by_test_id("admin-run-key")).to_have_text("acme")
    expect(page.get_by_test_id("admin-run-timeline")).to_contain_text("workflow.run-queued")


def test_pause_a_workflow_its_new_run_queues_then_runs_on_resume(
    page: Any, server: str, use_workflow: Any, work: Any
) -> None:
    use_workflow(wf.workflow("report", on="report.requested", steps=[wf.ret(7)]))
    emit("report.requested", {}, "r1")
    work()
    flows.sign_in_admin(page, server)
    filter_by_workflow(page, "report")
    first = run_by_trigger("report", "r1").run_id
    page.get_by_role("link", name=first).click()
    page.get_by_test_id("admin-pause-workflow").click()
    confirm = page.get_by_test_id("admin-confirm")
    expect(confirm.get_by_role("heading")).to_have_text("Pause the whole workflow?")
    confirm.get_by_role("button", name="Pause workflow").click()
    flows.banner(page.get_by_test_id("admin-run"), "status", "Workflow paused.")

    emit("report.requested", {}, "r2")
    work()
    page.get_by_role("navigation", name="Operations console").get_by_role(
        "link", name="Workflow runs"
    ).click()
    filter_by_workflow(page, "report")
    second = run_by_trigger("report", "r2").run_id
    row = page.get_by_test_id("admin-runs").locator(f"tr[data-run-id='{second}']")
    expect(row).to_contain_text("Queued")
    expect(row).to_contain_text("Paused")
    row.get_by_role("link", name=second).click()
    expect(status_of(page)).to_have_text("Queued Paused with its workflow")
    page.get_by_test_id("admin-resume-workflow").click()
    page.get_by_test_id("admin-confirm").get_by_role("button", name="Resume workflow").click()
    flows.banner(page.get_by_test_id("admin-run"), "status", "Workflow resumed.")
    work()
    page.reload()
    expect(status_of(page)).to_have_text("Completed")
    expect(page.get_by_test_id("admin-run-results")).to_contain_text('"return": 7')
    assert run_by_trigger("report", "r2").paused_by is None


def test_rerun_a_failed_run_from_a_step_lands_on_the_new_run(
    page: Any, server: str, use_workflow: Any, work: Any
) -> None:
    BROKEN["yes"] = True
    use_workflow(
        wf.workflow(
            "ledger",
            on="ledger.requested",
            steps=[wf.compute("fetch", lambda c: 1), wf.compute("post", flaky), wf.ret(3)],
        )
    )
    emit("ledger.requested", {}, "l1")
    work()
    (failed,) = runs("ledger")
    assert failed.status == "failed"
    flows.sign_in_admin(page, server)
    page.goto(f"{server}/admin/runs/{failed.run_id}")
    expect(status_of(page)).to_have_text("Failed")
    BROKEN["yes"] = False
    page.get_by_label("First step to run").select_option(label="1: post")
    page.get_by_role("button", name="Rerun from step").click()
    flows.banner(page.get_by_test_id("admin-run"), "status", f"A rerun of {failed.run_id}")
    new = next(r for r in runs("ledger") if r.run_id != failed.run_id)
    page.wait_for_url(f"{server}/admin/runs/{new.run_id}")
    expect(page.get_by_role("heading", level=1)).to_contain_text(new.run_id)
    link = page.get_by_test_id("admin-run-rerun-of")
    expect(link).to_have_text(f"{failed.run_id} from step 1: post")
    work()
    page.reload()
    expect(status_of(page)).to_have_text("Completed")
    assert run_events(new.run_id)[0].payload["rerunOf"] == failed.run_id
    link.get_by_role("link", name=failed.run_id).click()
    page.wait_for_url(f"{server}/admin/runs/{failed.run_id}")
    expect(status_of(page)).to_have_text("Failed")  # the original is left as it was


@pytest.mark.parametrize("js", [True, False], ids=["htmx", "no-js"])
def test_bulk_cancel_by_filter_after_a_count_confirmation(
    new_page: Callable[..., Any], server: str, use_workflow: Any, work: Any, js: bool
) -> None:
    use_workflow(wf.workflow("nap", on="nap.requested", steps=[wf.wait("z", "PT1H"), wf.ret(1)]))
    for i in range(3):
        emit("nap.requested", {}, f"n{i}")
    work()
    page = new_page(js=js)
    flows.sign_in_admin(page, server)
    work()  # the admin's own verification run waits too: the filter must leave it out
    page.get_by_label("Status").select_option(label="Waiting")
    filter_by_workflow(page, "nap")
    expect(page.get_by_test_id("admin-runs").locator("tbody tr")).to_have_count(3)
    page.get_by_role("link", name="Cancel matching runs").click()
    confirm = page.get_by_test_id("admin-confirm")
    expect(confirm.get_by_role("heading")).to_have_text("Cancel 3 runs?")
    expect(confirm.get_by_test_id("admin-bulk-filter")).to_have_text(
        "Tenant: default · Status: Waiting · Workflow: nap"
    )
    assert sorted(r.status for r in runs("nap")) == ["suspended"] * 3  # asking changes nothing
    confirm.get_by_role("button", name="Yes, cancel").click()
    flows.banner(page.get_by_test_id("admin-bulk"), "status", "Cancelled 3 of 3 runs.")
    expect(page.get_by_test_id("admin-runs-empty")).to_be_visible()  # none waits any more
    expect(page.get_by_test_id("admin-run-counts")).to_contain_text("Cancelled: 3")
    assert sorted(r.status for r in runs("nap")) == ["cancelled"] * 3
    assert runs("email-verification-registered")[0].status == "suspended"
    last = [run_events(r.run_id)[-1] for r in runs("nap")]
    assert {e.type for e in last} == {ev.RUN_CANCELLED}
    assert all(e.metadata["actor"].startswith("user:") for e in last)
