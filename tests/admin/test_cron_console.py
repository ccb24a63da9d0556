"""The console shows skipped runs (a cron tick while the previous run was
open): their status, why, and how many per workflow."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient

from tests.support.web import post
from tests.support.workflows import runs
from tests.workflows.cron_defs import T0, scheduler_tick, waiting


def test_the_runs_list_counts_and_filters_skipped_runs_per_workflow(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    d = use_workflow(waiting("console-cron"))
    for n in range(3):
        scheduler_tick(d, T0 + timedelta(minutes=5 * n))
    work()
    html = admin.get("/admin/runs?workflow=console-cron").get_data(as_text=True)
    assert ">Skipped: <strong>2</strong>" in html and ">Waiting: <strong>1</strong>" in html
    skipped = sorted(r.run_id for r in runs("console-cron") if r.status == "skipped")
    listed = admin.get("/admin/runs?workflow=console-cron&status=skipped").get_data(as_text=True)
    assert all(rid in listed for rid in skipped) and ">Skipped<" in listed
    page = admin.get(f"/admin/runs/{skipped[0]}").get_data(as_text=True)
    assert 'data-testid="admin-run-skipped"' in page
    assert "the previous run of this workflow was still open" in page
    assert "workflow.run-skipped" in page


def test_the_skipped_status_reads_in_german(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    d = use_workflow(waiting("console-cron-de"))
    scheduler_tick(d, T0)
    scheduler_tick(d, T0 + timedelta(minutes=5))
    work()
    assert post(admin, "/profile/language", language="de").status_code == 200
    html = admin.get("/admin/runs?workflow=console-cron-de").get_data(as_text=True)
    assert ">Übersprungen: <strong>1</strong>" in html
    skipped = [r for r in runs("console-cron-de") if r.status == "skipped"][0]
    page = admin.get(f"/admin/runs/{skipped.run_id}").get_data(as_text=True)
    assert "der vorige Lauf dieses Workflows noch offen war" in page
