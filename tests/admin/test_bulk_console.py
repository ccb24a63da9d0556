"""The runs list's bulk actions (issue 18.11, "the console does the same with a
confirmation that shows the count"): the first submit only counts and asks,
the confirmed one acts through `webapp.workflows.bulk` on the runs that match
then, never on more than the count shown, with the admin as actor; bad input
does nothing and says why."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.web import post
from tests.support.workflows import emit, run_events, runs
from tests.workflows.limit_defs import limited
from webapp.admin.views import bulk as views_bulk
from webapp.workflows import operations as ops
from webapp.workflows.store import run_events as ev

BROKEN = {"yes": True}
RUN = "00000000-0000-4000-8000-000000000000"


def flaky(_ctx: Any) -> int:
    if BROKEN["yes"]:
        raise RuntimeError("down")
    return 1


@pytest.fixture
def two_failed_one_waiting(use_workflow: Any, work: Any, admin: FlaskClient) -> None:
    BROKEN["yes"] = True
    use_workflow(wf.workflow("bulk-a", on="bulk.a", steps=[wf.compute("x", flaky)]))
    use_workflow(wf.workflow("bulk-b", on="bulk.b", steps=[wf.wait("w", "PT1H"), wf.ret(1)]))
    emit("bulk.a", {}, aggregate_id="a0")
    emit("bulk.a", {}, aggregate_id="a1")
    emit("bulk.b", {}, aggregate_id="b0")
    work()


def statuses(name: str) -> list[str]:
    return sorted(r.status for r in runs(name))


def hidden(html: str) -> dict[str, str]:
    """The confirmation form's hidden fields, as the browser would send them."""
    found = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)
    return {name: unescape(value) for name, value in found if name != "csrf_token"}


def test_the_list_offers_the_actions_for_its_filter(
    admin: FlaskClient, two_failed_one_waiting: None
) -> None:
    html = admin.get("/admin/runs?status=failed&workflow=bulk-a").get_data(as_text=True)
    assert 'data-testid="admin-bulk-cancel"' in html
    assert 'href="/admin/bulk/retry?status=failed&amp;workflow=bulk-a"' in html
    bad = admin.get("/admin/runs?status=exploded").get_data(as_text=True)
    assert 'data-testid="admin-bulk-cancel"' not in bad  # never for a filter with an error
    assert "Correct the filter above" in bad


def test_confirm_shows_the_count_and_filter_then_the_confirmed_submit_acts(
    admin: FlaskClient, two_failed_one_waiting: None, work: Any
) -> None:
    ask = admin.get("/admin/bulk/retry?status=failed&workflow=bulk-a")
    html = ask.get_data(as_text=True)
    assert ask.status_code == 200 and "Retry 2 runs?" in html
    assert "<title>Retry 2 runs?" in html
    assert "Tenant: default · Status: Failed · Workflow: bulk-a" in html  # the filter shown
    assert statuses("bulk-a") == ["failed", "failed"]  # asking changes nothing
    BROKEN["yes"] = False
    done = post(admin, "/admin/bulk/retry", **hidden(html))
    body = done.get_data(as_text=True)
    assert done.status_code == 200 and "Retried 2 of 2 runs." in body
    assert re.search(r"\d+ skipped", body) is None  # (Skipped is also a status of the filter)
    work()
    assert statuses("bulk-a") == ["completed", "completed"]
    retried = [e for r in runs("bulk-a") for e in run_events(r.run_id) if e.type == ev.RUN_RETRIED]
    assert len(retried) == 2 and all(e.metadata["actor"].startswith("user:") for e in retried)


def test_with_htmx_the_question_and_the_result_swap_in_place(
    admin: FlaskClient, two_failed_one_waiting: None
) -> None:
    ask = admin.get("/admin/bulk/cancel?workflow=bulk-b", headers={"HX-Request": "true"})
    html = ask.get_data(as_text=True)
    assert html.lstrip().startswith('<section id="admin-bulk"') and "Cancel 1 run?" in html
    assert "HX-Request" in ask.headers["Vary"]
    done = post(admin, "/admin/bulk/cancel", htmx=True, **hidden(html))
    body = done.get_data(as_text=True)
    assert body.lstrip().startswith('<section id="admin-bulk"') and "Cancelled 1 of 1 runs." in body
    assert (
        '<section id="admin-runs"' in body and 'hx-swap-oob="true"' in body
    )  # the list, refreshed
    assert statuses("bulk-b") == ["cancelled"]
    cancelled = run_events(runs("bulk-b")[0].run_id)[-1]
    assert cancelled.type == ev.RUN_CANCELLED and cancelled.payload["reason"] == "cancelled in bulk"
    assert cancelled.metadata["actor"].startswith("user:")


def test_runs_it_cannot_act_on_are_counted_as_skipped_with_the_reason(
    admin: FlaskClient, two_failed_one_waiting: None
) -> None:
    html = admin.get("/admin/bulk/pause?started_after=2000-01-01").get_data(as_text=True)
    n = int(re.search(r"Pause (\d+) runs\?", html).group(1))  # type: ignore[union-attr]
    assert n == 4  # both workflows' runs and the admin's own verification run
    body = post(admin, "/admin/bulk/pause", **hidden(html)).get_data(as_text=True)
    assert "Paused 2 of 4 runs. 2 skipped, each for the reason below." in body
    assert body.count("is already failed") == 2
    assert [r.paused_by for r in runs("bulk-b")] == ["run"]


def test_runs_triggered_after_the_question_are_left_alone(
    admin: FlaskClient, two_failed_one_waiting: None, work: Any
) -> None:
    html = admin.get("/admin/bulk/cancel?workflow=bulk-b").get_data(as_text=True)
    assert "Cancel 1 run?" in html
    emit("bulk.b", {}, aggregate_id="b1")  # a new run matches the filter too
    work()
    body = post(admin, "/admin/bulk/cancel", **hidden(html)).get_data(as_text=True)
    assert "Cancelled 1 of 1 runs." in body
    assert statuses("bulk-b") == ["cancelled", "suspended"]


def test_it_acts_only_on_the_runs_counted_that_still_match(
    admin: FlaskClient, two_failed_one_waiting: None, work: Any
) -> None:
    emit("bulk.b", {}, aggregate_id="b1")
    work()
    html = admin.get("/admin/bulk/pause?workflow=bulk-b&status=waiting").get_data(as_text=True)
    assert "Pause 2 runs?" in html
    first, second = runs("bulk-b")
    ops.cancel(second.run_id)  # no longer waiting when the admin confirms
    emit("bulk.b", {}, aggregate_id="b2")  # waits since: matches, but was not counted
    work()
    body = post(admin, "/admin/bulk/pause", **hidden(html)).get_data(as_text=True)
    assert "Paused 1 of 2 runs. 1 skipped, each for the reason below." in body
    assert f"<code>{second.run_id}</code></a>: no longer matches the filter" in body
    paused = {r.run_id: r.paused_by for r in runs("bulk-b")}
    assert paused.pop(first.run_id) == "run"
    assert list(paused.values()) == [None, None]  # the cancelled one and the new one


def test_ids_of_runs_outside_the_filter_are_never_acted_on(
    admin: FlaskClient, two_failed_one_waiting: None
) -> None:
    html = admin.get("/admin/bulk/cancel?workflow=bulk-a").get_data(as_text=True)
    other = runs("bulk-b")[0].run_id
    refused = post(admin, "/admin/bulk/cancel", **hidden(html) | {"runs": other})
    assert refused.status_code == 409 and "No runs match this filter" in refused.get_data(
        as_text=True
    )
    assert statuses("bulk-b") == ["suspended"] and statuses("bulk-a") == ["failed", "failed"]


def test_a_bulk_cancel_takes_queued_runs_first_so_none_starts_to_be_cancelled(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    use_workflow(limited(max_=1))
    for n in range(3):
        emit("sync.requested", {"n": n, "customerId": "acme"}, f"s{n}")
    work()
    assert statuses("sync") == ["queued", "queued", "suspended"]
    html = admin.get("/admin/bulk/cancel?workflow=sync").get_data(as_text=True)
    body = post(admin, "/admin/bulk/cancel", **hidden(html)).get_data(as_text=True)
    assert "Cancelled 3 of 3 runs." in body and statuses("sync") == ["cancelled"] * 3
    started = [r for r in runs("sync") if ev.RUN_STARTED in [e.type for e in run_events(r.run_id)]]
    assert len(started) == 1  # only the one that held the slot ever started


def test_a_filter_matching_nothing_says_so_and_does_nothing(
    admin: FlaskClient, two_failed_one_waiting: None
) -> None:
    ask = admin.get("/admin/bulk/cancel?workflow=nothing-here")
    html = ask.get_data(as_text=True)
    assert ask.status_code == 200 and "No runs match this filter" in html
    assert 'data-testid="admin-confirm-submit"' not in html
    html = admin.get("/admin/bulk/cancel?workflow=bulk-b").get_data(as_text=True)
    post(admin, "/admin/bulk/cancel", **hidden(html))
    again = post(admin, "/admin/bulk/retry", **hidden(html) | {"status": "failed"})
    assert again.status_code == 409 and "No runs match this filter" in again.get_data(as_text=True)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=exploded", "Choose a status from the list."),
        ("started_before=last+tuesday", "Enter a date like 2026-12-01"),
        ("started_after=2026-13-45", "Enter a date like 2026-12-01"),
        ("tenant=nope", "Choose a tenant from the list."),
        ("workflow=" + "x" * 50_000, "A workflow name has at most 200 characters."),
    ],
)
def test_a_bad_filter_does_nothing_and_says_why(
    admin: FlaskClient, two_failed_one_waiting: None, query: str, message: str
) -> None:
    ask = admin.get(f"/admin/bulk/cancel?{query}")
    assert ask.status_code == 422 and message in ask.get_data(as_text=True)
    assert "Nothing was done; the filter is not valid" in ask.get_data(as_text=True)
    fields = dict(p.split("=", 1) for p in query.split("&"))
    fields = {k: v.replace("+", " ") for k, v in fields.items()}
    act = post(admin, "/admin/bulk/cancel", runs=RUN, **fields)
    assert act.status_code == 422 and message in act.get_data(as_text=True)
    assert statuses("bulk-a") == ["failed", "failed"] and statuses("bulk-b") == ["suspended"]


@pytest.mark.parametrize(
    "fields",
    [
        {"runs": ""},
        {"runs": "garbage"},
        {"runs": f"{RUN},{RUN}"},
        {"runs": "{" + RUN + "}"},
        {"runs": ",".join([RUN] * 1100)},
        {"runs": "x" * 60_000},
    ],
    ids=["empty", "garbage", "twice", "braces", "too-many", "huge"],
)
def test_a_tampered_confirmation_does_nothing(
    admin: FlaskClient, two_failed_one_waiting: None, fields: dict[str, str]
) -> None:
    html = admin.get("/admin/bulk/cancel?workflow=bulk-a").get_data(as_text=True)
    act = post(admin, "/admin/bulk/cancel", **hidden(html) | fields)
    assert act.status_code == 422 and "This confirmation is not valid" in act.get_data(as_text=True)
    assert statuses("bulk-a") == ["failed", "failed"]


def test_a_form_over_the_size_limit_is_refused_whole(
    admin: FlaskClient, two_failed_one_waiting: None
) -> None:
    html = admin.get("/admin/bulk/cancel?workflow=bulk-a").get_data(as_text=True)
    act = post(admin, "/admin/bulk/cancel", **hidden(html) | {"status": "x" * 100_000})
    assert act.status_code == 413 and statuses("bulk-a") == ["failed", "failed"]


def test_unknown_actions_are_404(admin: FlaskClient) -> None:
    assert admin.get("/admin/bulk/resume-workflow?status=failed").status_code == 404
    assert post(admin, "/admin/bulk/delete", count="1", upto="x").status_code == 404


def test_more_than_the_console_acts_on_at_once_points_to_the_cli(
    admin: FlaskClient, two_failed_one_waiting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views_bulk, "MAX_AT_ONCE", 1)
    html = admin.get("/admin/bulk/cancel?workflow=bulk-a").get_data(as_text=True)
    assert "2 runs match: the console acts on at most 1 at once." in html
    assert "flask --app wsgi workflows cancel --filter workflow=bulk-a,tenant=default --yes" in html
    assert 'data-testid="admin-confirm-submit"' not in html


def test_started_before_filters_the_list(admin: FlaskClient, two_failed_one_waiting: None) -> None:
    html = admin.get("/admin/runs?workflow=bulk-a&started_before=2000-01-01").get_data(as_text=True)
    assert "No runs match these filters." in html
    html = admin.get("/admin/runs?workflow=bulk-a&started_before=2999-01-01").get_data(as_text=True)
    assert len(re.findall(r'<tr data-run-id="', html)) == 2
