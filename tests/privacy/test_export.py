"""The Export section end to end: request -> the worker builds the ZIP (a
workflow run) -> ready -> download, only by its owner; one active job per
user; the mail's link until it expires; failures and stale jobs end failed."""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from tests.support.accounts import PASSWORD, body, link_in, login, mails, register, user_row
from tests.support.web import fetch, htmx_get, post, unzip, without_csrf
from webapp.accounts import erase_accounts
from webapp.core import db
from webapp.privacy import exports
from webapp.privacy.jobs import clean_files, fail_stale
from webapp.privacy.tables import export_download_attempts, export_jobs
from webapp.workflows.store.tables import workflow_runs


def _jobs() -> list[Any]:
    with db.reading() as conn:
        return list(conn.execute(select(export_jobs).order_by(export_jobs.c.requested_at)))


def _folder(app: Any) -> Path:
    return Path(app.config["APP_CONFIG"].exports_path)


def _export_mails(app: Any, subject: str) -> list[Any]:
    return [m for m in mails(app) if m["Subject"] == subject]


def test_request_shows_preparing_and_polls_every_two_seconds(client: Any, user: Any) -> None:
    page = client.get("/privacy").get_data(as_text=True)
    assert "Export your data" in page and "Request data export" in page
    answer = post(client, "/privacy/export", htmx=True)
    assert answer.status_code == 200
    fragment = answer.get_data(as_text=True)
    assert fragment.lstrip().startswith("<section") and "<html" not in fragment
    assert "Your export is being prepared." in fragment
    assert 'hx-trigger="every 2s"' in fragment and "<progress" in fragment
    assert "Request data export" not in fragment  # the button is hidden meanwhile
    assert 'data-testid="privacy-export-refresh"' in fragment  # the no-JS way to look again
    assert [j.status for j in _jobs()] == ["pending"]
    # Polling while nothing changed swaps nothing (204): no focus lost, no re-announcement.
    assert htmx_get(client, "/privacy/export?poll=1").status_code == 204
    assert "Your export is being prepared." in client.get("/privacy/export").get_data(as_text=True)


def test_worker_builds_the_zip_and_only_the_owner_downloads_it(
    app: Any, client: Any, user: Any, other_client: Any, work: Any
) -> None:
    register(other_client, "bob@example.com")
    login(other_client, "bob@example.com")
    work()
    post(client, "/privacy/export", htmx=True)
    work()  # trigger -> run: claim, build, store, done
    (job,) = _jobs()
    assert job.status == "done" and job.bytes_written and job.file_name
    with db.reading() as conn:
        run = conn.execute(
            select(workflow_runs).where(workflow_runs.c.workflow_name == "privacy-export")
        ).one()
    assert run.status == "completed"

    polled = htmx_get(client, "/privacy/export?poll=1").get_data(as_text=True)
    assert "Your export is ready." in polled and "Available until" in polled
    assert "every 2s" not in polled  # polling stops
    assert (
        "Request a new export" in polled
        and "Your export is ready." in polled.split("live-status")[-1]
    )

    url = f"/privacy/exports/{job.id}/download"
    got = fetch(client, url)
    assert got.status_code == 200 and got.mimetype == "application/zip"
    assert got.headers["Content-Disposition"] == f"attachment; filename=data-export-{job.id}.zip"
    content = unzip(got.data)
    assert content["names"] == ["README.txt", "bundle.json"]
    data = content["bundle"]
    assert data["profile"]["email"] == "ada@example.com" and data["profile"]["id"] == user.id
    types = [e["type"] for e in data["events"]]
    assert types[0] == "user.registered" and "user.export-requested" in types
    registered = data["events"][0]["payload"]
    assert registered["email"] == "ada@example.com"  # decrypted
    assert registered["password_hash"] == "[secret: not exported]"
    assert "bob@example.com" not in got.data.decode("latin-1")
    assert "bob" not in str(data)
    shown = {"signed_in_at", "expires_at", "last_active_at", "browser", "system", "address"}
    assert data["sessions"] and all(set(s) == shown for s in data["sessions"])
    assert all(s["address"] == "127.0.0.x" for s in data["sessions"])  # shortened, never full
    assert len(data["devices"]) == 1 and set(data["devices"][0]) == {
        "first_signed_in_at",
        "last_signed_in_at",
    }
    assert any(r["workflow"] == "email-verification-registered" for r in data["workflow_runs"])
    assert "bundle.json" in content["readme"]

    # Another user's job answers exactly like a job that does not exist.
    theirs = other_client.get(url)
    missing = other_client.get("/privacy/exports/00000000-0000-4000-8000-000000000000/download")
    hostile = other_client.get("/privacy/exports/..%2F..%2Fetc%2Fpasswd/download")
    assert theirs.status_code == missing.status_code == 404
    # Byte for byte but for the CSRF token, signed with the second of the render.
    assert without_csrf(theirs.get_data(as_text=True)) == without_csrf(
        missing.get_data(as_text=True)
    )
    assert hostile.status_code == 404
    with db.reading() as conn:
        results = [r.result for r in conn.execute(select(export_download_attempts))]
    assert results.count("ok") == 1 and results.count("notFound") >= 2


def test_double_request_two_tabs_make_one_job(client: Any, user: Any, other_client: Any) -> None:
    login(other_client, "ada@example.com")  # a second browser of the same user
    post(client, "/privacy/export", htmx=True)
    post(client, "/privacy/export")
    post(other_client, "/privacy/export", htmx=True)
    assert len(_jobs()) == 1


def test_the_database_refuses_a_second_active_job(app: Any, user: Any, clock: Any) -> None:
    """The partial unique index (both backends) holds even for a writer that
    skips the check, e.g. a second process racing the first."""
    values = dict(tenant_id="default", user_id=user.id, status="pending", requested_at=clock.now())
    with db.transaction() as conn:
        conn.execute(
            insert(export_jobs).values(id="00000000-0000-4000-8000-000000000001", **values)
        )
    with pytest.raises(IntegrityError), db.transaction() as conn:
        conn.execute(
            insert(export_jobs).values(id="00000000-0000-4000-8000-000000000002", **values)
        )
    done = {**values, "status": "done"}
    with db.transaction() as conn:  # finished jobs are history: any number
        conn.execute(insert(export_jobs).values(id="00000000-0000-4000-8000-000000000003", **done))
        conn.execute(insert(export_jobs).values(id="00000000-0000-4000-8000-000000000004", **done))
    outcome = exports.request_export(user)
    assert outcome.ok and outcome.params["job_id"] == "00000000-0000-4000-8000-000000000001"


def test_mail_link_downloads_until_it_expires(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    work()
    (ready,) = _export_mails(app, "Your data export is ready")
    link = link_in(ready, "/privacy/download/")
    anonymous = app.test_client()
    first, second = (
        fetch(anonymous, link),
        fetch(anonymous, link, headers={"User-Agent": "probe/1"}),
    )
    assert first.status_code == second.status_code == 200  # usable until expiry
    assert unzip(second.data)["bundle"]["profile"]["email"] == "ada@example.com"
    with db.reading() as conn:
        rows = list(conn.execute(select(export_download_attempts)))
    assert [(r.via, r.result) for r in rows] == [("token", "ok"), ("token", "ok")]
    assert rows[1].user_agent == "probe/1" and rows[1].ip

    clock.advance(timedelta(days=7, minutes=1))
    refused = anonymous.get(link)
    assert refused.status_code == 404
    assert "This download link is invalid or has expired." in refused.get_data(as_text=True)
    assert client.get(f"/privacy/exports/{_jobs()[0].id}/download").status_code == 404
    page = client.get("/privacy").get_data(as_text=True)
    assert "Your last export has expired." in page and "Download export" not in page
    assert anonymous.get("/privacy/download/not-a-token").status_code == 404

    # The daily cleanup deletes the file; the job row stays as the record.
    assert clean_files(clock.now()) == 1
    assert list(_folder(app).glob("*.zip")) == []
    assert _jobs()[0].status == "done" and _jobs()[0].file_name is None


def test_a_build_that_fails_ends_failed_with_a_mail(
    app: Any, client: Any, user: Any, work: Any, make_config: Any, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    app.config["APP_CONFIG"] = make_config(export_dir=blocker / "exports")
    post(client, "/privacy/export", htmx=True)
    work()
    assert [j.status for j in _jobs()] == ["failed"]
    assert _export_mails(app, "Your data export failed")
    page = client.get("/privacy").get_data(as_text=True)
    assert "The last export failed. You can request a new one." in page
    assert "Request data export" in page


def test_a_job_stuck_running_is_failed_as_stale(
    app: Any, client: Any, user: Any, clock: Any, work: Any
) -> None:
    """A worker that died mid-build and never came back: after 30 minutes the
    job ends failed and the user may ask again."""
    exports.request_export(user)
    with db.transaction() as conn:
        conn.execute(export_jobs.update().values(status="running", started_at=clock.now()))
    clock.advance(timedelta(minutes=29))
    assert fail_stale(clock.now()) == 0
    clock.advance(timedelta(minutes=2))
    assert fail_stale(clock.now()) == 1
    (job,) = _jobs()
    assert job.status == "failed" and job.error == "stale"
    work()
    assert _export_mails(app, "Your data export failed")
    assert exports.request_export(user_row("ada@example.com")).ok
    assert [j.status for j in _jobs()] == ["failed", "pending"]


def test_erasure_after_the_grace_period_removes_export_files(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    work()
    assert len(list(_folder(app).glob("*.zip"))) == 1
    post(client, "/privacy/delete", current_password=PASSWORD)
    clock.advance(timedelta(days=15))
    assert erase_accounts.erase_due("default", clock.now()) == 1
    assert list(_folder(app).glob("*")) == []
    with db.reading() as conn:
        assert list(conn.execute(select(export_download_attempts))) == []


def test_the_ready_mail_names_the_expiry_and_warns_against_forwarding(
    app: Any, client: Any, user: Any, work: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    work()
    (ready,) = _export_mails(app, "Your data export is ready")
    text = body(ready)
    assert re.search(r"Download it until \w+ \d+, \d{4}", text)
    assert "do not forward" in text


def test_an_unexpected_failure_answers_in_the_section(
    client: Any, user: Any, monkeypatch: Any
) -> None:
    def broken(_user: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(exports, "request_export", broken)
    answer = post(client, "/privacy/export", htmx=True)
    fragment = answer.get_data(as_text=True)
    assert answer.status_code == 500 and answer.headers["X-Section-Fragment"] == "1"
    assert fragment.lstrip().startswith("<section") and "Something went wrong" in fragment
    assert client.get("/privacy/nothing-here").status_code == 404


def test_concurrent_requests_from_many_threads_make_one_job(app: Any, user: Any) -> None:
    """Like two web processes at once: every request answers with the one job."""
    barrier = threading.Barrier(6)
    answers: list[Any] = []

    def go() -> None:
        with app.app_context():
            barrier.wait()
            answers.append(exports.request_export(user))

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    (job,) = _jobs()
    assert len(answers) == 6 and all(a.ok for a in answers)
    assert {a.params["job_id"] for a in answers} == {job.id}
