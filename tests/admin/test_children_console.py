"""The console's run page shows the run's family (issue 18.7): a parent
links to its child runs with their status, a child links back to its
parent; a run without either shows no family block."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.workflows import emit, only_run


def test_the_run_page_shows_the_tree(admin: FlaskClient, use_workflow: Any, work: Any) -> None:
    use_workflow(wf.workflow("leaf", child=True, steps=[wf.wait("z", "PT1H"), wf.ret(1)]))
    use_workflow(
        wf.workflow(
            "trunk",
            on="tree.planted",
            steps=[wf.run_workflow("leaf"), wf.ret(lambda ctx: ctx["leaf"])],
        )
    )
    emit("tree.planted", {})
    work()
    trunk, leaf = only_run("trunk"), only_run("leaf")
    page = admin.get(f"/admin/runs/{trunk.run_id}").get_data(as_text=True)
    assert 'data-testid="admin-run-children"' in page
    assert f'href="/admin/runs/{leaf.run_id}"' in page and "leaf · Waiting" in page
    assert 'data-testid="admin-run-parent"' not in page
    child = admin.get(f"/admin/runs/{leaf.run_id}").get_data(as_text=True)
    assert f'href="/admin/runs/{trunk.run_id}"' in child
    assert 'data-testid="admin-run-parent"' in child
    assert 'data-testid="admin-run-children"' not in child


def test_a_lone_run_has_no_family_block(admin: FlaskClient, use_workflow: Any, work: Any) -> None:
    use_workflow(wf.workflow("solo", on="solo.go", steps=[wf.wait("z", "PT1H"), wf.ret(1)]))
    emit("solo.go", {})
    work()
    page = admin.get(f"/admin/runs/{only_run('solo').run_id}").get_data(as_text=True)
    assert 'data-testid="admin-run-family"' not in page
