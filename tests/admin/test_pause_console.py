"""The console pauses and resumes a run and a whole workflow, each after a
confirmation, with the admin as the events' actor."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.web import post
from tests.support.workflows import emit, only_run, run_events, runs
from webapp.workflows.store import run_events as ev


def napping(use_workflow: Any, work: Any) -> Any:
    use_workflow(wf.workflow("nap", on="nap.requested", steps=[wf.wait("z", "PT1H"), wf.ret(1)]))
    emit("nap.requested", {})
    work()
    return only_run("nap")


def test_pause_and_resume_a_run_from_its_page(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    run = napping(use_workflow, work)
    page = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert 'data-testid="admin-pause"' in page and 'data-testid="admin-resume"' not in page
    confirm = admin.get(f"/admin/runs/{run.run_id}/pause").get_data(as_text=True)
    assert "Pause this run?" in confirm and only_run("nap").paused_by is None
    done = post(admin, f"/admin/runs/{run.run_id}/pause", htmx=True)
    body = done.get_data(as_text=True)
    assert (
        done.status_code == 200
        and "Run paused." in body
        and 'data-testid="admin-run-paused"' in body
    )
    last = run_events(run.run_id)[-1]
    assert last.type == ev.RUN_PAUSED and last.metadata["actor"].startswith("user:")
    assert admin.get(f"/admin/runs/{run.run_id}/pause").status_code == 409
    resumed = post(admin, f"/admin/runs/{run.run_id}/resume")
    assert resumed.status_code == 200 and "Run resumed." in resumed.get_data(as_text=True)
    assert only_run("nap").paused_by is None


def test_pause_and_resume_the_workflow_from_a_run_page(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    run = napping(use_workflow, work)
    done = post(admin, f"/admin/runs/{run.run_id}/pause-workflow")
    body = done.get_data(as_text=True)
    assert done.status_code == 200 and "Workflow paused." in body
    assert "Paused with its workflow" in body and 'data-testid="admin-resume-workflow"' in body
    assert 'data-testid="admin-resume"' not in body  # held by the workflow's pause
    emit("nap.requested", {}, aggregate_id="a2")
    work()
    assert sorted(r.status for r in runs("nap")) == ["queued", "suspended"]
    again = post(admin, f"/admin/runs/{run.run_id}/resume-workflow")
    assert again.status_code == 200 and "Workflow resumed." in again.get_data(as_text=True)
    work()
    assert sorted(r.status for r in runs("nap")) == ["suspended", "suspended"]
    assert {r.paused_by for r in runs("nap")} == {None}


def test_rerun_from_a_step_in_the_console(admin: FlaskClient, use_workflow: Any, work: Any) -> None:
    use_workflow(
        wf.workflow(
            "twice",
            on="twice.requested",
            steps=[
                wf.compute("a", lambda c: 1),
                wf.compute("b", lambda c: c["a"] + 1),
                wf.ret(lambda c: c["b"]),
            ],
        )
    )
    emit("twice.requested", {})
    work()
    run = only_run("twice")
    page = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert 'name="from_step"' in page and ">1: b<" in page
    bad = post(admin, f"/admin/runs/{run.run_id}/rerun", from_step="9")
    assert bad.status_code == 422 and "--from-step must be" in bad.get_data(as_text=True)
    done = post(admin, f"/admin/runs/{run.run_id}/rerun", from_step="1")
    body = done.get_data(as_text=True)
    assert done.status_code == 200 and f"A rerun of {run.run_id} started" in body
    work()
    new = next(r for r in runs("twice") if r.run_id != run.run_id)
    assert new.status == "completed" and new.results["return"] == 2
    assert run_events(new.run_id)[0].metadata["actor"].startswith("user:")
