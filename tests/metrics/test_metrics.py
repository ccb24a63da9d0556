"""`/metrics` in one process: who may read it, what a scrape costs, and that
each counter moves exactly when what it counts happens (deltas between two
scrapes: the session's processes share one multiprocess directory)."""

from __future__ import annotations

import uuid

import pytest
from flask import Flask
from sqlalchemy import insert

import webapp.workflows as wf
from tests.helpers import append_one, projection, statements
from tests.support.accounts import login, register
from tests.support.metrics import delta, scrape
from tests.support.web import without_csrf
from tests.support.workflows import emit, only_run
from webapp import create_app
from webapp.core import db
from webapp.core.config import Config, ConfigError
from webapp.eventstore import NewEvent, StreamId, append, projections
from webapp.eventstore.tables import parked_events
from webapp.workflows.dispatch import signals, timer_loop
from webapp.workflows.store import run_events as ev

OUTSIDER = {"REMOTE_ADDR": "203.0.113.9"}
TOKEN = "scrape-token-0123456789abcdef"


def test_metrics_refuses_outsiders_with_the_ordinary_404(app: Flask, client):
    not_found = client.get("/no-such-page")
    assert not_found.status_code == 404
    refused = client.get("/metrics", environ_base=OUTSIDER)
    assert refused.status_code == 404
    # Nothing says the URL exists (the CSRF token is signed with the second of the render).
    assert without_csrf(refused.get_data(as_text=True)) == without_csrf(
        not_found.get_data(as_text=True)
    )
    wrong = client.get("/metrics", environ_base=OUTSIDER, headers={"Authorization": "Bearer x"})
    assert wrong.status_code == 404
    assert client.get("/metrics").status_code == 200  # loopback (127.0.0.1)
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "::1"}).status_code == 200


def test_a_bearer_token_or_an_allowed_network_admits_a_scraper(make_config, redis):
    web = create_app(make_config(metrics_token=TOKEN, metrics_allow=("10.0.0.0/8",)))
    c = web.test_client()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert c.get("/metrics", environ_base=OUTSIDER, headers=bearer).status_code == 200
    assert c.get("/metrics", environ_base=OUTSIDER).status_code == 404
    assert c.get("/metrics", environ_base={"REMOTE_ADDR": "10.1.2.3"}).status_code == 200
    assert c.get("/metrics").status_code == 404  # loopback is not in this METRICS_ALLOW
    off = create_app(make_config(metrics_enabled=False)).test_client()
    assert off.get("/metrics").status_code == 404


def test_invalid_metrics_settings_stop_start_up_naming_the_variable(tmp_path):
    base = {"INSTANCE_PATH": str(tmp_path)}
    cfg = Config.from_env({**base, "METRICS_ALLOW": "10.0.0.0/8, 192.168.1.7"})
    assert cfg.metrics_allow == ("10.0.0.0/8", "192.168.1.7/32")
    assert Config.from_env(base).metrics_allow == ("127.0.0.1/32", "::1/128")
    with pytest.raises(ConfigError, match="METRICS_ALLOW"):
        Config.from_env({**base, "METRICS_ALLOW": "localhost"})
    with pytest.raises(ConfigError, match="METRICS_TOKEN"):
        Config.from_env({**base, "METRICS_TOKEN": "short"})
    with pytest.raises(ConfigError, match="METRICS_CACHE_SECONDS"):
        Config.from_env({**base, "METRICS_CACHE_SECONDS": "-1"})
    with pytest.raises(ConfigError, match="METRICS_ENABLED"):
        Config.from_env({**base, "METRICS_ENABLED": "perhaps"})
    assert "scrape-token" not in repr(Config.from_env({**base, "METRICS_TOKEN": TOKEN}))


def test_a_scrape_reads_the_database_once_and_then_from_its_cache(make_config, redis):
    web = create_app(make_config(metrics_cache_seconds=3600))
    c = web.test_client()
    with web.app_context(), statements() as seen:
        scrape(c)
        first = [s for s in seen if not s.startswith(("BEGIN", "ROLLBACK", "COMMIT"))]
        seen.clear()
        scrape(c)
    assert len(first) == 1, first
    assert first[0].startswith("SELECT") and "UNION ALL" in first[0]
    assert seen == []  # the second scrape answered from the cache


def test_sign_ins_refusals_and_rate_limit_hits_are_counted(app: Flask, client):
    assert register(client, "ada@example.com").status_code == 200
    before = scrape(client)
    assert login(client, "ada@example.com").status_code == 302
    other = app.test_client()
    for _ in range(5):  # login-account allows 5 failures per 5 minutes
        assert login(other, "ada@example.com", password="wrong password!!").status_code == 422
    assert login(other, "ada@example.com").status_code == 429
    after = scrape(client)
    assert delta(after, before, "webapp_signins_total", outcome="succeeded") == 1
    assert delta(after, before, "webapp_signins_total", outcome="refused") == 5
    assert delta(after, before, "webapp_signins_total", outcome="rate_limited") == 1
    hits = "webapp_rate_limit_hits_total"
    assert delta(after, before, hits, limit="login-account") == 1
    assert delta(after, before, hits, limit="login-ip") == 0


def test_requests_are_counted_by_route_template_never_by_path(app: Flask, client):
    token = uuid.uuid4().hex
    before = scrape(client)
    client.get(f"/verify-email/{token}")
    client.get("/no-such-page")
    client.open("/login", method="BREW")
    after = scrape(client)
    name = "webapp_http_request_duration_seconds_count"
    page = client.get(f"/verify-email/{token}").status_code
    assert (
        delta(after, before, name, method="GET", route="/verify-email/<token>", status=str(page))
        == 1
    )
    assert delta(after, before, name, method="GET", route="<unmatched>", status="404") == 1
    assert delta(after, before, name, method="OTHER", route="<unmatched>", status="405") == 1
    assert token not in after.text


def test_timer_lateness_event_latency_and_step_durations(use_workflow, work, clock, client, redis):
    use_workflow(
        wf.workflow(
            "late-nap",
            on="late.go",
            steps=[wf.wait("nap", "PT10S"), wf.compute("after", lambda ctx: 1), wf.ret(1)],
        )
    )
    use_workflow(
        wf.workflow(
            "answer",
            on="answer.asked",
            steps=[wf.wait_for_event("reply", "answer.given", timeout="P1D"), wf.ret(1)],
            awaits={"answer.given": "answer.given"},
        )
    )
    before = scrape(client)
    emit("late.go", {})
    emit("answer.asked", {}, aggregate_id="q1")
    work()
    clock.advance(12.5)  # the wait was due 2.5 s ago when it is resumed
    timer_loop.fire_due(redis, signals.to_ms(clock.now()))
    work()
    emit("answer.given", {}, aggregate_id="q1")
    clock.advance(0.25)  # and the awaited event is a quarter of a second old
    work()
    assert only_run("late-nap").status == "completed"
    assert only_run("answer").status == "completed"
    after = scrape(client)
    late = "webapp_workflow_timer_lateness_seconds"
    assert delta(after, before, f"{late}_count", workflow="late-nap") == 1
    assert delta(after, before, f"{late}_sum", workflow="late-nap") == pytest.approx(2.5)
    event = "webapp_workflow_event_resume_latency_seconds"
    assert delta(after, before, f"{event}_count", workflow="answer") == 1
    assert delta(after, before, f"{event}_sum", workflow="answer") == pytest.approx(0.25)
    steps = "webapp_workflow_step_duration_seconds_count"
    assert delta(after, before, steps, kind="compute") == 1
    assert delta(after, before, steps, kind="return") == 2
    assert delta(after, before, "webapp_workflow_runs_completed_total", workflow="answer") == 1


def test_database_gauges_projection_lag_parked_events_and_mail(app: Flask, client, clock):
    with projection("metrics-probe", ["probe.happened"], lambda conn, e: None):
        projections.ensure_cursors()
        append_one("probe.happened")
        append_one("probe.happened")
        clock.advance(30)
        with db.transaction() as conn:
            conn.execute(
                insert(parked_events).values(
                    projection="metrics-probe",
                    event_id=str(uuid.uuid4()),
                    position=1,
                    attempts=5,
                    error_class="KeyError",
                    parked_at=clock.now(),
                )
            )
        s = scrape(client)
    assert s.value("webapp_projection_lag_events", projection="metrics-probe") == 2
    assert s.value("webapp_projection_lag_seconds", projection="metrics-probe") == 30
    assert s.value("webapp_projection_parked_events", projection="metrics-probe") == 1
    assert register(client, "bo@example.com").status_code == 200  # its mail waits in the outbox
    clock.advance(7)
    s = scrape(client)
    assert s.value("webapp_mail_outbox_pending") >= 1
    assert s.value("webapp_mail_outbox_oldest_pending_seconds") == 7
    assert s.value("webapp_metrics_source_up", source="database") == 1
    assert s.value("webapp_metrics_source_up", source="redis") == 1
    assert s.value("webapp_queue_jobs", queue="default") >= 1  # its delivery job, not run


def test_run_events_count_once_their_transaction_commits(app: Flask, client):
    def start(run_id: str) -> None:
        payload = ev.run_started("ghost-flow", "thing.happened", {"eventId": "e1"}, "fp", None)
        with db.transaction() as conn:
            stream = StreamId("default", ev.AGGREGATE_TYPE, run_id)
            append(conn, stream, [NewEvent(ev.RUN_STARTED, payload)], 0)
            if run_id == "rolled-back":
                raise RuntimeError("the transaction rolls back")

    before = scrape(client)
    with pytest.raises(RuntimeError):
        start("rolled-back")
    mid = scrape(client)
    start(str(uuid.uuid4()))
    after = scrape(client)
    name = "webapp_workflow_runs_started_total"
    assert delta(mid, before, name, workflow="ghost-flow") == 0
    assert delta(after, before, name, workflow="ghost-flow") == 1
