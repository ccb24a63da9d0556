"""Bulk actions by filter (issue 18.11): the count first, the action only
with --yes, each run through the one-run function."""

from __future__ import annotations

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, run_events, runs
from webapp.workflows.store import run_events as ev

BROKEN = {"yes": True}


def flaky(ctx):
    if BROKEN["yes"]:
        raise RuntimeError("down")
    return 1


@pytest.fixture
def three_failed_one_waiting(use_workflow, work):
    BROKEN["yes"] = True
    use_workflow(wf.workflow("bulk-a", on="bulk.a", steps=[wf.compute("x", flaky)]))
    use_workflow(wf.workflow("bulk-b", on="bulk.b", steps=[wf.wait("w", "PT1H"), wf.ret(1)]))
    for i in range(3):
        emit("bulk.a", {}, aggregate_id=f"a{i}")
    emit("bulk.b", {}, aggregate_id="b0")
    work()
    assert sorted(r.status for r in runs()) == ["failed", "failed", "failed", "suspended"]


def test_without_yes_it_only_counts(three_failed_one_waiting, runner):
    out = runner.invoke(args=["workflows", "retry", "--filter", "status=failed,workflow=bulk-a"])
    assert out.exit_code == 0
    assert "3 runs match. Nothing was changed: add --yes to retry them." in out.output
    assert sorted(r.status for r in runs()) == ["failed", "failed", "failed", "suspended"]


def test_with_yes_each_matching_run_is_retried(three_failed_one_waiting, runner, work):
    BROKEN["yes"] = False
    out = runner.invoke(args=["workflows", "retry", "--filter", "status=failed", "--yes"])
    assert out.exit_code == 0 and "retry: 3 of 3 runs done" in out.output
    work()
    assert sorted(r.status for r in runs("bulk-a")) == ["completed"] * 3
    retried = [e for r in runs("bulk-a") for e in run_events(r.run_id) if e.type == ev.RUN_RETRIED]
    assert len(retried) == 3 and all(e.metadata["actor"].startswith("cli:") for e in retried)


def test_cancel_and_pause_by_filter_report_what_was_refused(three_failed_one_waiting, runner):
    out = runner.invoke(args=["workflows", "pause", "--filter", "workflow=bulk-b", "--yes"])
    assert "pause: 1 of 1 runs done" in out.output
    out = runner.invoke(args=["workflows", "cancel", "--filter", "tenant=default", "--yes"])
    assert "cancel: 1 of 4 runs done" in out.output and "is already failed" in out.output
    assert sorted(r.status for r in runs()) == ["cancelled", "failed", "failed", "failed"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("status=lost", "unknown status"),
        ("colour=red", "unknown key"),
        ("workflow", "key=value"),
        ("started-before=yesterday", "ISO 8601"),
        ("started-before=2026-01-01T00:00", "time zone"),
        (",", "at least one"),
    ],
)
def test_a_bad_filter_is_refused_with_its_reason(runner, text, message):
    out = runner.invoke(args=["workflows", "cancel", "--filter", text])
    assert out.exit_code != 0 and message in out.output


def test_a_run_id_and_a_filter_together_are_refused(runner):
    out = runner.invoke(args=["workflows", "cancel", "x", "--filter", "status=failed"])
    assert out.exit_code != 0 and "not both" in out.output
    none = runner.invoke(args=["workflows", "cancel"])
    assert none.exit_code != 0 and "RUN_ID or --filter" in none.output


def test_started_before_and_after_select_by_start_time(three_failed_one_waiting, runner):
    later = min(r.started_at for r in runs()).isoformat()
    out = runner.invoke(args=["workflows", "cancel", "--filter", f"started-before={later}"])
    assert "0 runs match" in out.output
    out = runner.invoke(args=["workflows", "cancel", "--filter", f"started-after={later}"])
    assert "4 runs match" in out.output
