"""What the console shows of flow control: a queued run's concurrency key,
its place in its key's queue and its priority (list and run page), and a
rerun's link to the run it reruns."""

from __future__ import annotations

import re
from typing import Any

from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.web import post
from tests.support.workflows import emit, runs
from tests.workflows.limit_defs import limited


def request(n: int, customer: str = "acme", priority: int = 3) -> None:
    emit("sync.requested", {"n": n, "customerId": customer, "priority": priority}, f"s{n}")


def run_of(n: int) -> Any:
    return next(r for r in runs("sync") if r.trigger_event_ref["aggregateId"] == f"s{n}")


def queue_cell(html: str, run_id: str) -> str:
    row = re.search(rf'<tr data-run-id="{run_id}">(.*?)</tr>', html, re.S)
    assert row, run_id
    cell = re.search(r'data-testid="admin-runs-queue">(.*?)</td>', row.group(1), re.S)
    return cell.group(1).strip() if cell else ""


def test_queued_runs_show_their_key_place_and_priority(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    use_workflow(limited(max_=1))
    request(0)
    request(1)
    request(2, priority=5)  # starts before 1 when the slot frees
    request(3, customer="globex")
    work()
    html = admin.get("/admin/runs?workflow=sync").get_data(as_text=True)
    assert queue_cell(html, run_of(2).run_id) == "key acme · position 1 · priority 5"
    assert queue_cell(html, run_of(1).run_id) == "key acme · position 2 · priority 3"
    assert queue_cell(html, run_of(0).run_id) == ""  # holds the slot
    assert queue_cell(html, run_of(3).run_id) == ""
    page = admin.get(f"/admin/runs/{run_of(1).run_id}").get_data(as_text=True)
    assert re.search(r'data-testid="admin-run-queue">key acme · position 2 · priority 3<', page)
    assert '<dd data-testid="admin-run-key"><code>acme</code></dd>' in page
    assert '<dd data-testid="admin-run-priority">3</dd>' in page
    running = admin.get(f"/admin/runs/{run_of(0).run_id}").get_data(as_text=True)
    assert 'data-testid="admin-run-queue"' not in running and "<code>acme</code>" in running
    emit("sync.done", {"n": 0}, "d0")  # run 0 completes, 2 takes the slot
    work()
    html = admin.get("/admin/runs?workflow=sync&status=queued").get_data(as_text=True)
    assert queue_cell(html, run_of(1).run_id) == "key acme · position 1 · priority 3"


def test_a_workflow_wide_limit_is_shown_as_such(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    use_workflow(limited(max_=1, keyed=False))
    request(0)
    request(1)
    work()
    html = admin.get("/admin/runs?workflow=sync").get_data(as_text=True)
    assert (
        queue_cell(html, run_of(1).run_id) == "key (the whole workflow) · position 1 · priority 3"
    )


def test_a_rerun_links_to_the_run_it_reruns(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    use_workflow(
        wf.workflow(
            "twice",
            on="twice.requested",
            steps=[wf.compute("a", lambda c: 1), wf.compute("b", lambda c: c["a"] + 1)],
        )
    )
    emit("twice.requested", {})
    work()
    (original,) = runs("twice")
    body = post(admin, f"/admin/runs/{original.run_id}/rerun", from_step="1").get_data(as_text=True)
    link = re.search(
        r'data-testid="admin-run-rerun-of"><a href="([^"]+)"><code>([^<]+)</code></a> from step 1: b<',
        body,
    )
    assert link and link.group(2) == original.run_id
    assert link.group(1) == f"/admin/runs/{original.run_id}"
    plain = admin.get(f"/admin/runs/{original.run_id}").get_data(as_text=True)
    assert 'data-testid="admin-run-rerun-of"' not in plain
