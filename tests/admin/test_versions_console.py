"""The console and workflow versions: a run's version, the "Definition
changed" badge with its step diff, migrating one run, and the deploy check
on /admin/stuck."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.web import post
from tests.support.workflows import emit, run_events, runs
from tests.workflows.versions_defs import v1, v2
from webapp.workflows.store import run_events as ev


def waiting_v1(use_workflow: Any, work: Any) -> Any:
    use_workflow(v1())
    emit("ver.ordered", {"n": 7}, aggregate_id="o7")
    work()
    (run,) = runs("ver-order")
    return run


def test_run_page_shows_the_version_and_a_safe_change(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    run = waiting_v1(use_workflow, work)
    page = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert 'data-testid="admin-run-version">1<' in page
    assert "Definition changed" not in page
    # a step added after the waiting one: the run goes on
    use_workflow(
        wf.workflow(
            "ver-order",
            on="ver.ordered",
            awaits={"shipped": "ver.shipped"},
            steps=[*v1().steps, wf.compute("audit", lambda ctx: 1)],
        )
    )
    page = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert "Definition changed" in page and "goes on under the code" in page
    assert "step &#39;audit&#39; added at index 3" in page


def test_run_page_badge_and_migrate_one_run(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    run = waiting_v1(use_workflow, work)
    use_workflow(v2())
    page = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert "Migrate run" in page and 'name="to"' in page
    bad = post(admin, f"/admin/runs/{run.run_id}/migrate", to="9")
    assert bad.status_code == 422 and "Choose one of the versions offered." in bad.get_data(
        as_text=True
    )
    garbage = post(admin, f"/admin/runs/{run.run_id}/migrate", to="2", map="nonsense")
    assert garbage.status_code == 409 and "old_step=new_step" in garbage.get_data(as_text=True)
    done = post(admin, f"/admin/runs/{run.run_id}/migrate", htmx=True, to="2")
    body = done.get_data(as_text=True)
    assert done.status_code == 200 and body.lstrip().startswith('<section id="admin-run"')
    assert "Run migrated to version 2." in body
    last = run_events(run.run_id)[-1]
    assert last.type == ev.RUN_MIGRATED and last.metadata["actor"].startswith("user:")
    assert runs("ver-order")[0].definition_version == 2


def test_a_run_whose_version_is_gone_shows_the_badge_and_stuck_lists_it(
    admin: FlaskClient, use_workflow: Any, work: Any
) -> None:
    ok = admin.get("/admin/stuck").get_data(as_text=True)
    assert 'data-testid="admin-check-ok"' in ok
    run = waiting_v1(use_workflow, work)
    use_workflow(v2())
    wf.unregister("ver-order", 1)
    page = admin.get(f"/admin/runs/{run.run_id}").get_data(as_text=True)
    assert "Definition changed" in page and "Version 1 is not in the code." in page
    assert "would fail with workflow_definition_changed" in page
    stuck = admin.get("/admin/stuck").get_data(as_text=True)
    assert 'data-workflow="ver-order" data-version="1"' in stuck
    assert "1 run waiting at step" in stuck and "would fail" in stuck
