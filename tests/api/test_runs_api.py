"""/api/v1/runs and /api/v1/workflows: a service follows and steers its
tenant's runs as an operator does in the console, through the same
functions, with the token's id as the events' actor; another tenant's runs
are as invisible as runs that do not exist."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.support.api import bearer, problem
from tests.support.workflows import emit, only_run, run_events, runs
from webapp.workflows.store import run_events as ev

FLAKY = {"broken": True}


def flaky(_ctx: Any) -> int:
    if FLAKY["broken"]:
        raise RuntimeError("the payment provider is down")
    return 7


@pytest.fixture
def flows(use_workflow: Any) -> None:
    use_workflow(wf.workflow("nap", on="nap.requested", steps=[wf.wait("z", "PT1H"), wf.ret(1)]))
    use_workflow(wf.workflow("charge", on="order.placed", steps=[wf.compute("charge", flaky)]))
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
    use_workflow(wf.workflow("kid", child=True, steps=[wf.wait("z", "PT1H"), wf.ret(1)]))
    use_workflow(
        wf.workflow("parent", on="parent.requested", steps=[wf.run_workflow("kid", input={"n": 1})])
    )


def test_list_runs_with_the_consoles_filters_and_cursor_pages(
    client: FlaskClient, token: Any, flows: Any, work: Any, clock: Any
) -> None:
    for i in range(5):
        emit("nap.requested", {}, aggregate_id=f"n{i}")
        clock.advance(timedelta(seconds=1))
    FLAKY["broken"] = True
    emit("order.placed", {})
    emit("nap.requested", {}, aggregate_id="elsewhere", tenant="acme")
    work()
    secret = token("runs:read")
    all_runs = client.get("/api/v1/runs", headers=bearer(secret)).get_json()
    assert len(all_runs["runs"]) == 6 and all_runs["nextCursor"] is None
    assert [r["workflow"] for r in all_runs["runs"]].count("nap") == 5  # acme's run is not listed
    started = [r["startedAt"] for r in all_runs["runs"]]
    assert started == sorted(started, reverse=True)

    seen: list[str] = []
    url = "/api/v1/runs?workflow=nap&limit=2"
    while url:
        page = client.get(url, headers=bearer(secret)).get_json()
        assert len(page["runs"]) <= 2
        seen += [r["runId"] for r in page["runs"]]
        url = (
            f"/api/v1/runs?workflow=nap&limit=2&cursor={page['nextCursor']}"
            if page["nextCursor"]
            else ""
        )
    assert seen == [r["runId"] for r in all_runs["runs"] if r["workflow"] == "nap"]

    failed = client.get("/api/v1/runs?status=failed", headers=bearer(secret)).get_json()["runs"]
    assert [r["workflow"] for r in failed] == ["charge"] and failed[0]["status"] == "failed"
    waiting = client.get("/api/v1/runs?status=suspended", headers=bearer(secret)).get_json()
    assert len(waiting["runs"]) == 5 and not any(r["paused"] for r in waiting["runs"])
    later = client.get("/api/v1/runs?startedAfter=2999-01-01T00:00:00Z", headers=bearer(secret))
    assert later.get_json() == {"runs": [], "nextCursor": None}

    for query, parameter in [
        ("status=exploded", "status"),
        ("limit=0", "limit"),
        ("limit=many", "limit"),
        ("startedAfter=yesterday", "startedAfter"),
        ("startedAfter=2026-12-01T00:00:00", "startedAfter"),  # no timezone: ambiguous
        ("startedAfter=-0.00046", "startedAfter"),  # a number is no date-time
        ("startedBefore=1733400000", "startedBefore"),
        ("workflow=" + "x" * 201, "workflow"),
        ("cursor=garbage", "cursor"),
        ("cursor=1.2", "cursor"),
        ("tenant=acme", "tenant"),  # the token's tenant, never a parameter
        ("limit=1&limit=2", "limit"),
    ]:
        p = problem(client.get(f"/api/v1/runs?{query}", headers=bearer(secret)), 400)
        assert [e["parameter"] for e in p["errors"]] == [parameter], (query, p)


def test_get_a_run_with_its_results_wait_and_family(
    client: FlaskClient, token: Any, flows: Any, work: Any
) -> None:
    emit("parent.requested", {})
    work()
    parent = only_run("parent")
    child = only_run("kid")
    secret = token("runs:read")
    got = client.get(f"/api/v1/runs/{parent.run_id}", headers=bearer(secret))
    assert got.status_code == 200
    body = got.get_json()
    assert body["runId"] == parent.run_id and body["workflow"] == "parent"
    assert body["status"] == "suspended" and body["version"] == 1 and body["paused"] is False
    assert body["children"] == [{"runId": child.run_id, "workflow": "kid", "status": "suspended"}]
    kid = client.get(f"/api/v1/runs/{child.run_id}", headers=bearer(secret)).get_json()
    assert kid["parent"] == parent.run_id and kid["children"] == []
    assert [(p["stepIndex"], p["kind"]) for p in kid["pending"]] == [(0, "step.waiting")]
    assert set(body) >= {"results", "concurrencyKey", "rateKey", "queue", "error", "attempt"}
    assert "events" not in body and "tenant" not in body


def test_another_tenants_run_is_answered_as_no_run(
    client: FlaskClient, token: Any, flows: Any, work: Any
) -> None:
    emit("nap.requested", {}, tenant="acme")
    work()
    theirs = only_run("nap")
    assert theirs.tenant_id == "acme"
    mine = token()  # every scope, tenant default
    missing = str(uuid.uuid4())
    for method, path in [
        ("GET", ""),
        ("POST", "/cancel"),
        ("POST", "/retry"),
        ("POST", "/pause"),
        ("POST", "/resume"),
        ("POST", "/rerun"),
    ]:
        kw: dict[str, Any] = {"json": {"fromStep": 0}} if path == "/rerun" else {}
        a = client.open(
            f"/api/v1/runs/{theirs.run_id}{path}", method=method, headers=bearer(mine), **kw
        )
        b = client.open(f"/api/v1/runs/{missing}{path}", method=method, headers=bearer(mine), **kw)
        pa, pb = problem(a, 404), problem(b, 404)
        assert pa["detail"].replace(theirs.run_id, "ID") == pb["detail"].replace(missing, "ID")
        assert pa.keys() == pb.keys()
    assert problem(client.get("/api/v1/runs/not-a-uuid", headers=bearer(mine)), 404)
    assert only_run("nap").status == "suspended" and only_run("nap").paused_by is None
    # Their own token sees it.
    acme = token("runs:read", tenant="acme")
    assert client.get(f"/api/v1/runs/{theirs.run_id}", headers=bearer(acme)).status_code == 200


def test_cancel_pause_resume_retry_and_rerun(
    client: FlaskClient, token: Any, flows: Any, work: Any
) -> None:
    FLAKY["broken"] = True
    emit("nap.requested", {})
    emit("order.placed", {})
    emit("twice.requested", {})
    work()
    secret = token("runs:write", "runs:read")
    nap = only_run("nap")

    paused = client.post(f"/api/v1/runs/{nap.run_id}/pause", headers=bearer(secret))
    assert paused.status_code == 200 and paused.get_json()["paused"] is True
    last = run_events(nap.run_id)[-1]
    assert last.type == ev.RUN_PAUSED and last.metadata["actor"].startswith("api-token:")
    p = problem(client.post(f"/api/v1/runs/{nap.run_id}/pause", headers=bearer(secret)), 409)
    assert "already paused" in p["detail"]
    resumed = client.post(f"/api/v1/runs/{nap.run_id}/resume", json={}, headers=bearer(secret))
    assert resumed.status_code == 200 and resumed.get_json()["paused"] is False

    cancelled = client.post(
        f"/api/v1/runs/{nap.run_id}/cancel",
        json={"reason": "customer left"},
        headers=bearer(secret),
    )
    assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"
    assert run_events(nap.run_id)[-1].payload["reason"] == "customer left"
    p = problem(client.post(f"/api/v1/runs/{nap.run_id}/cancel", headers=bearer(secret)), 409)
    assert "already cancelled" in p["detail"]
    p = problem(
        client.post(
            f"/api/v1/runs/{nap.run_id}/cancel", json={"reason": "r" * 201}, headers=bearer(secret)
        ),
        400,
    )
    assert p["errors"][0]["pointer"] == "/reason"

    charge = only_run("charge")
    assert charge.status == "failed"
    FLAKY["broken"] = False
    retried = client.post(f"/api/v1/runs/{charge.run_id}/retry", headers=bearer(secret))
    assert retried.status_code == 200
    work()
    assert only_run("charge").status == "completed"
    problem(client.post(f"/api/v1/runs/{charge.run_id}/retry", headers=bearer(secret)), 409)

    twice = only_run("twice")
    rerun = client.post(
        f"/api/v1/runs/{twice.run_id}/rerun", json={"fromStep": 1}, headers=bearer(secret)
    )
    assert rerun.status_code == 201
    new_id = rerun.get_json()["runId"]
    assert rerun.headers["Location"] == f"/api/v1/runs/{new_id}" and new_id != twice.run_id
    work()
    assert {r.run_id: r.status for r in runs("twice")}[new_id] == "completed"
    p = problem(
        client.post(
            f"/api/v1/runs/{twice.run_id}/rerun", json={"fromStep": 9}, headers=bearer(secret)
        ),
        400,
    )
    assert (
        p["errors"][0]["pointer"] == "/fromStep" and "fromStep must be from 0 to 2" in p["detail"]
    )
    for bad in ({}, {"fromStep": "1"}, {"fromStep": -1}, {"fromStep": 1, "step": 1}):
        problem(
            client.post(f"/api/v1/runs/{twice.run_id}/rerun", json=bad, headers=bearer(secret)), 400
        )


def test_workflows_list_pause_and_resume(
    client: FlaskClient, token: Any, flows: Any, work: Any
) -> None:
    emit("nap.requested", {})
    work()
    listed = client.get("/api/v1/workflows", headers=bearer(token("runs:read"))).get_json()
    nap = next(w for w in listed["workflows"] if w["name"] == "nap")
    assert nap == {
        "name": "nap",
        "paused": False,
        "trigger": {"kind": "event", "eventType": "nap.requested", "schedule": None, "path": None},
        "versions": [{"version": 1, "starts": True}],
    }
    secret = token("workflows:write")
    done = client.post("/api/v1/workflows/nap/pause", headers=bearer(secret))
    assert done.status_code == 200 and done.get_json() == {"name": "nap", "paused": True, "runs": 1}
    assert only_run("nap").paused_by == "workflow"
    problem(client.post("/api/v1/workflows/nap/pause", headers=bearer(secret)), 409)
    back = client.post("/api/v1/workflows/nap/resume", headers=bearer(secret))
    assert back.get_json() == {"name": "nap", "paused": False, "runs": 1}
    problem(client.post("/api/v1/workflows/nap/resume", headers=bearer(secret)), 409)
    problem(client.post("/api/v1/workflows/nope/pause", headers=bearer(secret)), 404)
