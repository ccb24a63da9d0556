"""Operator CLI, webhook triggers (HMAC), cron triggers (one run per tick)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from datetime import UTC, datetime, timedelta

import pytest

import webapp.workflows as wf
from tests.support.burst import BurstWorker
from tests.support.workflows import emit, only_run, runs, types
from webapp.core.config import ROOT
from webapp.workflows.triggers import cron as trigger
from webapp.workflows.webhook_route import signed_headers


@pytest.fixture
def cli(app):
    return app.test_cli_runner()


def test_cli_runs_show_cancel_retry_stuck(use_workflow, work, clock, cli):
    use_workflow(
        wf.workflow("cli-use_workflow", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)])
    )
    emit("order.placed", {})
    work()
    run = only_run("cli-use_workflow")
    out = cli.invoke(args=["workflows", "runs", "--status", "suspended"]).output
    assert run.run_id in out and "suspended" in out
    assert "no runs" in cli.invoke(args=["workflows", "runs", "--status", "failed"]).output
    assert (
        run.run_id
        in cli.invoke(args=["workflows", "runs", "--workflow", "cli-use_workflow"]).output
    )
    show = cli.invoke(args=["workflows", "show", run.run_id]).output
    assert (
        "workflow.run-started" in show
        and "workflow.step.waiting" in show
        and "waits: step 0 for step.waiting, until" in show
    )
    assert "no stuck runs" in cli.invoke(args=["workflows", "stuck"]).output
    clock.advance(timedelta(minutes=7))
    assert run.run_id in cli.invoke(args=["workflows", "stuck"]).output
    res = cli.invoke(args=["workflows", "cancel", run.run_id])
    assert res.exit_code == 0 and "cancelled" in res.output
    again = cli.invoke(args=["workflows", "cancel", run.run_id])
    assert again.exit_code != 0 and "already cancelled" in again.output
    bad = cli.invoke(args=["workflows", "retry", run.run_id])
    assert bad.exit_code != 0 and "only failed runs" in bad.output
    assert (
        "no run"
        in cli.invoke(args=["workflows", "show", "00000000-0000-0000-0000-000000000000"]).output
    )


def test_cli_runs_lists_the_newest_runs_of_every_tenant_newest_first(
    use_workflow, work, clock, cli
):
    use_workflow(
        wf.workflow("cli-tenants", on="order.placed", steps=[wf.wait("p", "PT1M"), wf.ret(1)])
    )
    for i, tenant in enumerate(["acme", "default", "zeta", "acme", "default", "zeta"]):
        emit("order.placed", {}, aggregate_id=f"o{i}", tenant=tenant)
        work()
        clock.advance(timedelta(seconds=1))
    newest = sorted(runs("cli-tenants"), key=lambda r: r.started_at, reverse=True)
    assert len(newest) == 6 and {r.tenant_id for r in newest} == {"acme", "default", "zeta"}

    def listed(*args: str) -> list[str]:
        out = cli.invoke(args=["workflows", "runs", *args]).output
        return [line.split()[0] for line in out.splitlines()[1:]]

    assert listed("--limit", "4") == [r.run_id for r in newest[:4]]
    assert listed("--status", "suspended", "--workflow", "cli-tenants") == [
        r.run_id for r in newest
    ]
    assert listed("--status", "failed") == []


@pytest.fixture
def hook_app(make_config, redis):
    from tests.support.database import clean_database
    from webapp import create_app

    application = create_app(make_config(secrets={"incoming": "s3cret"}, webhook_max_body=2048))
    clean_database()
    with application.app_context():
        yield application
    clean_database()


def test_webhook_starts_a_run_only_with_a_valid_signature(hook_app, redis):
    from webapp.eventstore import projections

    d = wf.workflow(
        "hooked", webhook="incoming", steps=[wf.ret(lambda c: c.trigger.payload["body"]["x"])]
    )
    wf.register(d)
    projections.ensure_cursors()
    try:
        client = hook_app.test_client()
        body = json.dumps({"x": 7}).encode()
        r = client.post("/hooks/incoming", data=body)
        assert r.status_code == 401 and "signature" in r.get_json()["error"]
        r = client.post("/hooks/incoming", data=body, headers={"X-Signature-256": "sha256=00"})
        assert r.status_code == 401
        r = client.post(
            "/hooks/incoming",
            data=b"not json",
            headers=signed_headers("s3cret", b"not json"),
        )
        assert r.status_code == 400 and r.get_json() == {"error": "body must be JSON"}
        big = b'{"x": "' + b"a" * 4000 + b'"}'
        r = client.post("/hooks/incoming", data=big, headers=signed_headers("s3cret", big))
        assert r.status_code == 413 and "too large" in r.get_json()["error"]
        assert client.post("/hooks/nowhere", data=body).status_code == 404
        BurstWorker(["default"], connection=redis).work(burst=True)
        assert runs("hooked") == []
        r = client.post("/hooks/incoming", data=body, headers=signed_headers("s3cret", body))
        assert r.status_code == 202
        BurstWorker(["default"], connection=redis).work(burst=True)
        run = only_run("hooked")
        assert run.status == "completed" and run.results["return"] == 7
        assert run.trigger_event_type == "workflow.webhook-received"
    finally:
        wf.unregister("hooked")


def test_cron_workflow_starts_one_run_per_tick(use_workflow, work):
    from webapp.jobs.registry import get_job

    d = use_workflow(
        wf.workflow(
            "nightly", cron="0 3 * * *", steps=[wf.ret(lambda c: c.trigger.payload["tick"])]
        )
    )
    spec = get_job(trigger.cron_job_name(d))
    assert spec.cron == "0 3 * * *" and spec.per_tenant
    tick = datetime(2030, 1, 1, 3, 0, tzinfo=UTC)
    spec.func("default", tick)
    spec.func("default", tick)  # a second scheduler or a restart
    spec.func("default", tick + timedelta(seconds=20))  # same minute
    work()
    run = only_run("nightly")
    assert run.status == "completed" and run.results["return"] == tick.isoformat()
    assert types(run.run_id) == ["run-started", "run-completed"]
    spec.func("default", tick + timedelta(days=1))
    work()
    assert len(runs("nightly")) == 2


def test_resume_due_runs_job_is_registered():
    from webapp.jobs.registry import get_job

    spec = get_job("resume-due-runs")
    assert (spec.cron, spec.per_tenant, spec.concurrency) == ("* * * * *", True, "skip")


@pytest.fixture
def hooked(hook_app):
    from webapp.eventstore import projections

    d = wf.workflow("hooked", webhook="incoming", steps=[wf.ret(1)])
    wf.register(d)
    projections.ensure_cursors()
    yield hook_app.test_client()
    wf.unregister("hooked")


def test_webhook_replay_with_an_old_timestamp_is_refused(hooked, clock):
    body = b'{"x": 1}'
    now = int(clock.now().timestamp())
    old = signed_headers("s3cret", body, timestamp=now - 301)
    r = hooked.post("/hooks/incoming", data=body, headers=old)
    assert r.status_code == 401 and "tolerance" in r.get_json()["error"]
    future = signed_headers("s3cret", body, timestamp=now + 301)
    assert hooked.post("/hooks/incoming", data=body, headers=future).status_code == 401
    # a signature without the timestamp it was made for does not pass either
    headers = signed_headers("s3cret", body, timestamp=now)
    headers["X-Webhook-Timestamp"] = str(now - 1)
    assert hooked.post("/hooks/incoming", data=body, headers=headers).status_code == 401
    del headers["X-Webhook-Timestamp"]
    assert hooked.post("/hooks/incoming", data=body, headers=headers).status_code == 401
    assert runs("hooked") == []


@pytest.mark.parametrize("skew", [-299, -120, 0, 120, 299])
def test_webhook_clock_skew_within_tolerance_is_accepted(hooked, clock, skew):
    body = b'{"x": 1}'
    ts = int(clock.now().timestamp()) + skew
    r = hooked.post("/hooks/incoming", data=body, headers=signed_headers("s3cret", body, ts))
    assert r.status_code == 202


def _doc_snippet(marker: str) -> str:
    doc = (ROOT / "docs" / "workflows.md").read_text()
    start = doc.index("```sh", doc.index(marker)) + len("```sh")
    return textwrap.dedent(doc[start : doc.index("```", start)])


def test_the_docs_openssl_curl_example_signs_a_request_we_accept(hooked):
    # curl is replaced by a function printing its arguments, one per line.
    script = "curl() { printf '%s\\n' \"$@\"; }\n" + _doc_snippet("Signing a request from a shell")
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    headers = dict(out[i + 1].split(": ", 1) for i, a in enumerate(out) if a == "-H")
    body = out[out.index("--data") + 1].encode()
    assert out[2].endswith("/hooks/billing/paid")
    r = hooked.post("/hooks/incoming", data=body, headers=headers)
    assert r.status_code == 202, r.get_json()
