"""The console shows what the rate controls did: skipped runs counted and
filtered by status (with why), a throttled run's rate key and planned start."""

from __future__ import annotations

import re
from typing import Any

from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.workflows import emit, run_events, runs


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-run-id="([^"]+)"', html)


def digest(**controls: Any) -> wf.Workflow:
    return wf.workflow(
        "digest",
        on="digest.requested",
        steps=[wf.ret(lambda ctx: 1)],
        **controls,
    )


def test_skipped_runs_are_counted_filtered_and_explained(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    use_workflow(digest(rate_limit=wf.rate(1, per="PT1H", key=lambda e: e.payload["u"])))
    for n in range(4):
        emit("digest.requested", {"u": "u1"}, aggregate_id=f"d{n}")
    work()
    skipped = sorted(r.run_id for r in runs("digest") if r.status == "skipped")
    assert len(skipped) == 3
    html = admin.get("/admin/runs?workflow=digest").get_data(as_text=True)
    assert ">Skipped: <strong>3</strong>" in html
    only = admin.get("/admin/runs?status=skipped&workflow=digest").get_data(as_text=True)
    assert sorted(rows(only)) == skipped
    page = admin.get(f"/admin/runs/{skipped[0]}").get_data(as_text=True)
    assert 'data-testid="admin-run-skipped"' in page
    assert "window was full (rate limit)</dd>" in page
    assert not re.search(r'name="action" value="rerun', page)  # it never started


def test_a_throttled_queued_run_shows_its_rate_key_and_planned_start(
    admin: FlaskClient, use_workflow: Any, work: Any, runner: Any
) -> None:
    use_workflow(digest(throttle=wf.rate(1, per="PT1M", key=lambda e: e.payload["u"])))
    emit("digest.requested", {"u": "team-7"}, aggregate_id="d1")
    emit("digest.requested", {"u": "team-7"}, aggregate_id="d2")
    work()
    queued = next(r for r in runs("digest") if r.status == "queued")
    page = admin.get(f"/admin/runs/{queued.run_id}").get_data(as_text=True)
    assert '<dd data-testid="admin-run-rate-key"><code>team-7</code></dd>' in page
    assert 'data-testid="admin-run-start-at"' in page
    shown = runner.invoke(args=["workflows", "show", queued.run_id])
    planned = run_events(queued.run_id)[0].payload["startAt"]
    assert f"queued: rate key 'team-7', starts at {planned}" in shown.output
