"""A run followed live in real Chromium with htmx's SSE extension: the
console's run page shows 50 progress entries in order as a real worker
emits them, and its status turns to Completed, with no reload."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from playwright.sync_api import expect

import webapp.workflows as wf
from tests.browser.test_admin_browser import sign_in_admin, status_of
from tests.procs import Proc, app_env, until, until_listening
from tests.support.workflows import emit, runs
from tests.workflows.messages_defs import ENTRIES, STREAMING
from webapp.eventstore import projections

pytestmark = pytest.mark.browser


def test_the_console_follows_a_run_emitting_50_entries_live(
    page: Any,
    server: str,
    use_workflow: Any,
    database_url: str,
    redis_url: str,
    redis: Any,
    tmp_path: Any,
) -> None:
    use_workflow(STREAMING)
    emit("messages.stream", {}, aggregate_id="live-1")
    projections.run_all()
    (run,) = runs(STREAMING.name)
    env = app_env(database_url, redis_url, tmp_path / "instance")
    worker = Proc(
        [sys.executable, "-c", "from tests.workflows.messages_defs import main; main()"],
        env,
        tmp_path / "worker.log",
    )
    try:
        until_listening([worker], redis)
        until(lambda: runs(STREAMING.name)[0].status == "suspended", what="the run waits")
        sign_in_admin(page, server)
        with page.expect_response(lambda r: "/events" in r.url):
            page.goto(f"{server}/admin/runs/{run.run_id}")
        expect(status_of(page)).to_have_text("Waiting")
        page.evaluate("window.__sameDocument = true")
        wf.signal(run.run_id, "go")
        entries = page.get_by_test_id("run-progress-entry")
        # the worker's pace, not the page's: 50 commits on a loaded machine
        expect(entries).to_have_count(ENTRIES, timeout=60_000)
        assert entries.all_inner_texts() == [f"entry {i}" for i in range(1, ENTRIES + 1)]
        expect(status_of(page)).to_have_text("Completed", timeout=30_000)
        assert page.evaluate("window.__sameDocument") is True  # no reload
    finally:
        worker.stop()
