"""Operators: `flask exports list|show` (ids, states, attempts; no addresses)
and the jobs the scheduler runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.support.web import fetch, post
from webapp.jobs.registry import get_job
from webapp.privacy.jobs import export_cleanup


def test_exports_list_and_show(app: Any, client: Any, user: Any, work: Any, runner: Any) -> None:
    assert "no exports" in runner.invoke(args=["exports", "list"]).output
    post(client, "/privacy/export", htmx=True)
    work()
    listed = runner.invoke(args=["exports", "list"])
    assert listed.exit_code == 0 and user.id in listed.output and "done" in listed.output
    job_id = listed.output.splitlines()[1].split()[0]
    fetch(client, f"/privacy/exports/{job_id}/download", headers={"User-Agent": "ua/1"})
    shown = runner.invoke(args=["exports", "show", job_id])
    assert shown.exit_code == 0
    assert f"job {job_id}" in shown.output and "status done" in shown.output
    assert "downloads and attempts: 1" in shown.output and "ua/1" in shown.output
    assert "ada@example.com" not in listed.output + shown.output
    missing = runner.invoke(args=["exports", "show", "no-such-job"])
    assert missing.exit_code != 0 and "no export job" in missing.output


def test_the_jobs_are_scheduled() -> None:
    assert get_job("export-stale").cron == "*/5 * * * *"
    assert get_job("export-cleanup").cron == "30 3 * * *"


def test_download_attempts_are_deleted_after_90_days(
    app: Any, client: Any, user: Any, work: Any, runner: Any, clock: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    work()
    job_id = runner.invoke(args=["exports", "list"]).output.splitlines()[1].split()[0]
    fetch(client, f"/privacy/exports/{job_id}/download")
    clock.advance(timedelta(days=89))
    export_cleanup(None, clock.now())
    assert "downloads and attempts: 1" in runner.invoke(args=["exports", "show", job_id]).output
    clock.advance(timedelta(days=2))
    export_cleanup(None, clock.now())
    assert "downloads and attempts: 0" in runner.invoke(args=["exports", "show", job_id]).output


def test_the_mail_link_is_limited_to_30_a_minute_per_address(app: Any) -> None:
    anonymous = app.test_client()
    statuses = [fetch(anonymous, f"/privacy/download/guess{i}").status_code for i in range(31)]
    assert statuses[:30] == [404] * 30 and statuses[30] == 429
