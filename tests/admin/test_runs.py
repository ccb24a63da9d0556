"""/admin/runs and /admin/runs/<id>: what an on-call admin sees and does."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.accounts import ADMIN, link_in, mails
from tests.support.web import csrf_token, post
from tests.support.workflows import emit, only_run, run_events, runs
from webapp.admin import queries

FLAKY = {"broken": True}


def flaky(_ctx: Any) -> dict[str, str]:
    if FLAKY["broken"]:
        raise RuntimeError("the payment provider is down")
    return {"secret": "enc:v1:c2VhbGVk", "plain": "ok"}


@pytest.fixture
def failing(use_workflow: Any, work: Any) -> Any:
    FLAKY["broken"] = True
    use_workflow(wf.workflow("charge", on="order.placed", steps=[wf.compute("charge", flaky)]))
    emit("order.placed", {"n": 1})
    work()
    return only_run("charge")


def verification_run() -> Any:
    return only_run("email-verification-registered")


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-run-id="([^"]+)"', html)


def test_runs_list_counts_filters_and_words(admin: FlaskClient, failing: Any, work: Any) -> None:
    work()  # the admin's own verification run starts and waits
    html = admin.get("/admin/runs").get_data(as_text=True)
    assert 'data-testid="admin-runs"' in html
    assert set(rows(html)) == {failing.run_id, verification_run().run_id}
    assert ">Failed: <strong>1</strong>" in html and ">Waiting: <strong>1</strong>" in html
    assert ">Completed: <strong>0</strong>" in html
    failed = admin.get("/admin/runs?status=failed").get_data(as_text=True)
    assert rows(failed) == [failing.run_id]
    assert ">Failed<" in failed and "0: charge" in failed  # status word, current step by name
    assert rows(admin.get("/admin/runs?workflow=charge").get_data(as_text=True)) == [failing.run_id]
    later = admin.get("/admin/runs?started_after=2999-01-01").get_data(as_text=True)
    assert rows(later) == [] and "No runs match these filters." in later
    assert 'hx-trigger="every 5s"' in html  # live refresh while open


def test_the_live_refresh_answers_only_the_table(admin: FlaskClient, failing: Any) -> None:
    resp = admin.get("/admin/runs?status=failed", headers={"HX-Request": "true"})
    body = resp.get_data(as_text=True)
    assert resp.status_code == 200 and "<html" not in body
    assert body.lstrip().startswith('<section id="admin-runs"') and rows(body) == [failing.run_id]
    assert "HX-Request" in resp.headers["Vary"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=exploded", "Choose a status from the list."),
        ("tenant=nope", "Choose a tenant from the list."),
        ("started_after=yesterday", "Enter a date like 2026-12-01"),
        ("workflow=" + "x" * 201, "A workflow name has at most 200 characters."),
        ("before=garbage", "This page link is not valid; showing the first page."),
    ],
)
def test_bad_filters_are_reported_and_the_list_still_shows(
    admin: FlaskClient, failing: Any, query: str, message: str
) -> None:
    resp = admin.get(f"/admin/runs?{query}")
    html = resp.get_data(as_text=True)
    assert resp.status_code == 422
    assert "There is a problem" in html and message in html
    assert "<title>Error: " in html
    assert failing.run_id in html  # the other filters (none here) still apply


def test_keyset_paging_walks_every_run_once(
    admin: FlaskClient, use_workflow: Any, work: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "PAGE_SIZE", 2)
    use_workflow(wf.workflow("tick", on="thing.ticked", steps=[wf.ret(1)]))
    for i in range(5):
        emit("thing.ticked", {"i": i}, aggregate_id=f"t{i}")
        work()
        clock.advance(1)
    expected = [r.run_id for r in sorted(runs("tick"), key=lambda r: r.started_at, reverse=True)]
    seen: list[str] = []
    url: str | None = "/admin/runs?workflow=tick"
    while url:
        html = admin.get(url).get_data(as_text=True)
        seen += rows(html)
        found = re.search(r'id="admin-runs-next" href="([^"]+)"', html)
        url = found.group(1).replace("&amp;", "&") if found else None
    assert seen == expected


def test_run_page_timeline_wait_match_and_no_personal_data(
    app: Any, admin: FlaskClient, work: Any
) -> None:
    work()
    run = verification_run()
    resp = admin.get(f"/admin/runs/{run.run_id}")
    html = resp.get_data(as_text=True)
    assert resp.status_code == 200 and 'data-testid="admin-run"' in html
    assert "workflow.run-started" in html and "workflow.step.waiting-for-event" in html
    assert "user.email-verified" in html  # the awaited event
    expected = f'user_id = "{run.subject_id}" and address_version = 1'
    assert expected.replace('"', "&#34;") in html
    assert "matches the loaded definition" in html
    assert ">Cancel run<" in html and ">Retry run<" not in html
    # The address is verified: the run completes with the awaited event as its result,
    # whose address is sealed. The page never shows it, sealed or opened.
    link = link_in([m for m in mails(app) if m["To"] == ADMIN][-1], "/verify-email/")
    admin.post(link, data={"csrf_token": csrf_token(admin, "/profile")})
    work()
    html = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert "workflow.run-completed" in html and "[sealed]" in html
    assert ADMIN not in html.replace(f"{ADMIN}<", "")  # only the nav could name the admin
    assert "enc:v1:" not in html


def test_unknown_or_malformed_run_is_404(admin: FlaskClient) -> None:
    for run_id in ("00000000-0000-4000-8000-000000000000", "x" * 400, "1' OR '1'='1"):
        assert admin.get(f"/admin/runs/{run_id}").status_code == 404


def test_retry_run_confirms_then_continues_and_records_the_admin(
    admin: FlaskClient, failing: Any, work: Any
) -> None:
    page = admin.get(f"/admin/runs/{failing.run_id}/retry")
    assert page.status_code == 200 and "Retry this run?" in page.get_data(as_text=True)
    assert only_run("charge").status == "failed"  # the confirm page changes nothing
    FLAKY["broken"] = False
    done = post(admin, f"/admin/runs/{failing.run_id}/retry")
    assert done.status_code == 200 and "Run retried" in done.get_data(as_text=True)
    retried = run_events(failing.run_id)[-1]
    assert retried.type == "workflow.run-retried"
    assert retried.metadata["actor"].startswith("user:")
    work()
    assert only_run("charge").status == "completed"
    again = post(admin, f"/admin/runs/{failing.run_id}/retry")
    assert again.status_code == 409 and "only failed runs can be retried" in again.get_data(
        as_text=True
    )


def test_cancel_a_waiting_run_with_htmx(admin: FlaskClient, work: Any) -> None:
    work()
    run = verification_run()
    confirm = admin.get(f"/admin/runs/{run.run_id}/cancel", headers={"HX-Request": "true"})
    body = confirm.get_data(as_text=True)
    assert body.lstrip().startswith('<div id="admin-run-actions"') and "Cancel this run?" in body
    done = post(admin, f"/admin/runs/{run.run_id}/cancel", htmx=True)
    body = done.get_data(as_text=True)
    assert done.status_code == 200 and body.lstrip().startswith('<section id="admin-run"')
    assert "Run cancelled." in body and ">Cancelled<" in body
    assert verification_run().status == "cancelled"
    assert run_events(run.run_id)[-1].metadata["actor"].startswith("user:")
    assert admin.get(f"/admin/runs/{run.run_id}/cancel").status_code == 409


def test_a_long_run_shows_its_last_events_and_says_so(
    admin: FlaskClient, use_workflow: Any, work: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "TIMELINE_LIMIT", 2)
    use_workflow(wf.workflow("nap", on="nap.started", steps=[wf.wait("nap", "PT10M"), wf.ret(1)]))
    emit("nap.started", {})
    work()
    run = only_run("nap")
    post(admin, f"/admin/runs/{run.run_id}/cancel")
    html = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert "1 earlier ones are left out" in html
    assert "workflow.run-started" not in html  # the first of three
    assert "workflow.step.waiting" in html and "workflow.run-cancelled" in html
