"""The console shows a child tree in real Chromium (issue 18.7): from a
parent's run page an admin follows the link to its child, and from the child
back to its parent; the parent completes with the child's result."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

import webapp.workflows as wf
from tests.browser.test_admin_browser import sign_in_admin, status_of
from tests.support.workflows import emit, only_run

pytestmark = pytest.mark.browser


def test_the_console_walks_a_child_tree(
    page: Any, server: str, use_workflow: Any, work: Any
) -> None:
    use_workflow(
        wf.workflow(
            "pack-item",
            child=True,
            steps=[wf.ret(lambda ctx: {"packed": ctx.trigger.payload["input"]["sku"]})],
        )
    )
    use_workflow(
        wf.workflow(
            "ship-order",
            on="order.paid",
            steps=[
                wf.run_workflow("pack-item", input=lambda ctx: {"sku": ctx.trigger.payload["sku"]}),
                wf.ret(lambda ctx: ctx["pack-item"]["packed"]),
            ],
        )
    )
    emit("order.paid", {"sku": "sku-7"})
    work()
    parent, child = only_run("ship-order"), only_run("pack-item")
    assert parent.results["return"] == "sku-7"
    sign_in_admin(page, server)
    page.goto(f"{server}/admin/runs/{parent.run_id}")
    expect(status_of(page)).to_have_text("Completed")
    children = page.get_by_test_id("admin-run-children")
    expect(children).to_contain_text("pack-item")
    expect(children).to_contain_text("Completed")
    children.get_by_role("link", name=child.run_id).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(child.run_id)
    timeline = page.get_by_test_id("admin-run-timeline")
    expect(timeline).to_contain_text("workflow.child-settled")
    page.get_by_test_id("admin-run-parent").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(parent.run_id)
    expect(page.get_by_test_id("admin-run-timeline")).to_contain_text("workflow.child-started")
