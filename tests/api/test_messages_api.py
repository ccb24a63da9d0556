"""POST /api/v1/runs/{id}/signal and /update: another service talks to one
run as `wf.signal` and `wf.update` do, through the same functions; the
answers an update can get (accepted, rejected, not-accepting, timed-out);
what is refused and what that leaves stored (nothing)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

import webapp.workflows as wf
from tests.support.api import bearer, problem
from tests.support.workflows import emit, only_run, run_events
from webapp.core import db
from webapp.workflows.store.tables import workflow_run_messages


def judge(results: Any, payload: Any) -> Any:
    if payload["amount"] > results["limit"]:
        raise wf.Rejected(f"over the limit of {results['limit']}")
    return {"approved": payload["amount"]}


APPROVAL = wf.workflow(
    "api-approval",
    on="approval.requested",
    steps=[
        wf.compute("limit", lambda ctx: 100),
        wf.set_state("mark-waiting", "stage", "waiting for approval"),
        wf.wait_for_signal("first", timeout="P2D", signal="approve"),
        wf.wait_for_signal("second", timeout="P2D", signal="approve"),
        wf.wait_for_update("amount", handler=judge, timeout="P1D"),
        wf.ret(lambda ctx: {"signals": [ctx["first"], ctx["second"]], "amount": ctx["amount"]}),
    ],
)


@pytest.fixture
def approval(use_workflow: Any, work: Any) -> str:
    use_workflow(APPROVAL)
    emit("approval.requested", {})
    work()
    run = only_run(APPROVAL.name)
    assert (run.status, run.step_index) == ("suspended", 2)
    return str(run.run_id)


def stored(run_id: str) -> list[Any]:
    with db.reading() as conn:
        q = select(workflow_run_messages).where(workflow_run_messages.c.run_id == run_id)
        return list(conn.execute(q.order_by(workflow_run_messages.c.seq)))


def post(client: FlaskClient, secret: str, run_id: str, what: str, body: Any) -> Any:
    return client.post(f"/api/v1/runs/{run_id}/{what}", json=body, headers=bearer(secret))


def test_signals_wake_the_run_in_order_and_once_per_key(
    client: FlaskClient, token: Any, approval: str, work: Any
) -> None:
    secret = token("runs:write")
    first = post(
        client,
        secret,
        approval,
        "signal",
        {"name": "approve", "payload": {"by": "ann"}, "key": "k-1"},
    )
    assert first.status_code == 202, first.get_data(as_text=True)
    signal_id = first.get_json()["signalId"]
    again = post(
        client,
        secret,
        approval,
        "signal",
        {"name": "approve", "payload": {"by": "ann"}, "key": "k-1"},
    )
    assert again.status_code == 202 and again.get_json()["signalId"] == signal_id
    assert len(stored(approval)) == 1  # the key's second signal stored nothing
    # a second signal before its wait is kept for it
    second = post(client, secret, approval, "signal", {"name": "approve", "payload": ["bob", 2]})
    assert second.status_code == 202 and second.get_json()["signalId"] != signal_id
    work()
    run = only_run(APPROVAL.name)
    assert (run.status, run.step_index) == ("suspended", 4)
    assert (run.results["first"], run.results["second"]) == ({"by": "ann"}, ["bob", 2])
    signalled = [e for e in run_events(approval) if e.type == "workflow.signal-received"]
    assert len(signalled) == 2


def test_updates_rejected_accepted_timed_out_and_not_accepting(
    client: FlaskClient, token: Any, approval: str, work: Any
) -> None:
    secret = token("runs:write")
    # waiting for a signal, not for this update: answered at once, nothing stored
    early = post(client, secret, approval, "update", {"name": "amount", "payload": {"amount": 1}})
    assert early.status_code == 200
    assert early.get_json() == {
        "outcome": "not-accepting",
        "value": None,
        "reason": None,
        "updateId": None,
    }
    assert stored(approval) == []
    for _ in range(2):
        assert post(client, secret, approval, "signal", {"name": "approve"}).status_code == 202
    work()
    assert only_run(APPROVAL.name).step_index == 4
    got = client.get(f"/api/v1/runs/{approval}", headers=bearer(token("runs:read")))
    assert got.get_json()["results"]["$state"] == {"stage": "waiting for approval"}
    # no worker runs while the caller waits: timed-out, then the same key gets the answer
    body = {"name": "amount", "payload": {"amount": 500}, "key": "u-1", "timeout": 0}
    waited = post(client, secret, approval, "update", body).get_json()
    assert waited["outcome"] == "timed-out" and waited["updateId"]
    work()
    rejected = post(client, secret, approval, "update", {**body, "timeout": 5}).get_json()
    assert rejected == {
        "outcome": "rejected",
        "value": None,
        "reason": "over the limit of 100",
        "updateId": waited["updateId"],
    }
    assert only_run(APPROVAL.name).status == "suspended"  # a rejection leaves the wait open
    body = {"name": "amount", "payload": {"amount": 40}, "key": "u-2", "timeout": 0}
    assert post(client, secret, approval, "update", body).get_json()["outcome"] == "timed-out"
    work()
    accepted = post(client, secret, approval, "update", body).get_json()
    assert (accepted["outcome"], accepted["value"]) == ("accepted", {"approved": 40})
    done = only_run(APPROVAL.name)
    assert done.status == "completed"
    assert done.results["return"]["amount"] == {"approved": 40}
    # the key still answers once the run has settled; a new message is refused
    assert post(client, secret, approval, "update", body).get_json()["outcome"] == "accepted"
    late = problem(post(client, secret, approval, "update", {"name": "amount", "payload": {}}), 409)
    assert "completed" in late["detail"]
    late = problem(post(client, secret, approval, "signal", {"name": "approve"}), 409)
    assert "completed" in late["detail"]
    assert len(stored(approval)) == 4  # two signals, two updates


def test_messages_need_the_scope_and_the_tenants_own_run(
    client: FlaskClient, token: Any, approval: str
) -> None:
    reader = token("runs:read", "events:write")
    for what in ("signal", "update"):
        problem(post(client, reader, approval, what, {"name": "approve"}), 403)
    theirs = token("runs:write", tenant="acme")
    missing = str(uuid.uuid4())
    for what in ("signal", "update"):
        a = problem(post(client, theirs, approval, what, {"name": "approve"}), 404)
        b = problem(post(client, theirs, missing, what, {"name": "approve"}), 404)
        assert a["detail"].replace(approval, "ID") == b["detail"].replace(missing, "ID")
        problem(post(client, theirs, "not-a-run", what, {"name": "approve"}), 404)
    assert stored(approval) == []


@pytest.mark.parametrize(
    ("what", "body", "pointer"),
    [
        ("signal", {}, "/name"),
        ("signal", {"name": ""}, "/name"),
        ("signal", {"name": "a" * 201}, "/name"),
        ("signal", {"name": 7}, "/name"),
        ("signal", {"name": " approve"}, "/name"),
        ("signal", {"name": "approve", "key": ""}, "/key"),
        ("signal", {"name": "approve", "key": "k" * 201}, "/key"),
        ("signal", {"name": "approve", "to": "x"}, "/to"),
        ("update", {"name": "amount", "timeout": 31}, "/timeout"),
        ("update", {"name": "amount", "timeout": -1}, "/timeout"),
        ("update", {"name": "amount", "timeout": "5"}, "/timeout"),
        ("update", {"name": "amount", "key": 3}, "/key"),
    ],
)
def test_bad_messages_are_refused_with_the_field_and_store_nothing(
    client: FlaskClient, token: Any, approval: str, what: str, body: Any, pointer: str
) -> None:
    p = problem(post(client, token("runs:write"), approval, what, body), 400)
    assert pointer in [e.get("pointer") for e in p["errors"]], p
    assert stored(approval) == []


def test_a_payload_over_the_engines_bound_is_refused_even_when_the_body_fits(
    app: Any, client: FlaskClient, token: Any, approval: str
) -> None:
    app.config["MAX_CONTENT_LENGTH"] = 200_000  # an operator who raised MAX_CONTENT_LENGTH
    big = {"name": "approve", "payload": "x" * (64 * 1024 + 1)}
    p = problem(post(client, token("runs:write"), approval, "signal", big), 400)
    assert p["errors"] == [{"pointer": "/payload", "detail": p["detail"]}]
    assert p["detail"] == "the payload must be at most 65536 bytes of JSON"
    assert stored(approval) == []
