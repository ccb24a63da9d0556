"""/admin/stuck, /admin/projections (Retry, Skip) and /admin/queues (failed mails):
the same operations as the CLI, each recorded as an event with the admin as actor."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient

import webapp.workflows as wf
from tests.helpers import append_one, projection
from tests.mail.test_outbox import _record, _row
from tests.mailserver import SmtpServer
from tests.support.web import post
from tests.support.workflows import emit, only_run
from webapp.core import db
from webapp.eventstore import StreamId, parked, projections, read_stream


def _parked_one(name: str = "test-prices") -> int:
    append_one("price.changed")
    assert projections.run_all(max_attempts=1).parked == 1
    with db.reading() as conn:
        (row,) = parked.list_parked(conn)
    return int(row.id)


def _projection_events(name: str) -> list[Any]:
    with db.reading() as conn:
        return read_stream(conn, StreamId("default", "projection", name))


def test_stuck_lists_an_overdue_run_with_its_reason(
    admin: FlaskClient, use_workflow: Any, work: Any, clock: Any
) -> None:
    use_workflow(wf.workflow("nap", on="nap.started", steps=[wf.wait("nap", "PT10M"), wf.ret(1)]))
    emit("nap.started", {})
    work()
    run = only_run("nap")
    assert "No stuck runs." in admin.get("/admin/stuck").get_data(as_text=True)
    clock.advance(timedelta(minutes=16))  # due 6 minutes ago, and nobody resumed it
    html = admin.get("/admin/stuck").get_data(as_text=True)
    assert run.run_id in html and "Due since" in html and "and not resumed" in html
    assert f"/admin/runs/{run.run_id}/cancel" in html  # the same action as on the run page
    assert admin.get("/admin/stuck?tenant=nope").status_code == 404


def test_projections_page_shows_cursors_lag_and_parked_events(admin: FlaskClient) -> None:
    with projection("test-prices", ["price.changed"], _fail):
        parked_id = _parked_one()
        html = admin.get("/admin/projections").get_data(as_text=True)
    assert 'data-testid="admin-projections"' in html and "test-prices" in html
    assert f'data-parked-id="{parked_id}"' in html
    assert "price.changed" in html and "LookupError" in html


def _fail(_conn: Any, _event: Any) -> None:
    raise LookupError("missing")


def test_skip_a_parked_event_is_an_event_by_the_admin(admin: FlaskClient) -> None:
    with projection("test-prices", ["price.changed"], _fail):
        parked_id = _parked_one()
        resp = post(admin, f"/admin/projections/parked/{parked_id}/skip", htmx=True)
        body = resp.get_data(as_text=True)
        assert resp.status_code == 200 and body.lstrip().startswith('<section id="admin-parked"')
        assert "The parked event was skipped" in body and "No parked events." in body
        again = post(admin, f"/admin/projections/parked/{parked_id}/skip")
        assert again.status_code == 409
    (skipped,) = _projection_events("test-prices")
    assert skipped.type == "projection.parked-event-skipped"
    assert skipped.metadata["actor"].startswith("user:")


def test_retry_a_parked_event_in_the_console_after_fixing_it(admin: FlaskClient) -> None:
    cause = {"fixed": False}

    def apply(_conn: Any, _event: Any) -> None:
        if not cause["fixed"]:
            raise LookupError("missing")

    with projection("test-prices", ["price.changed"], apply):
        parked_id = _parked_one()
        failed = post(admin, f"/admin/projections/parked/{parked_id}/retry")
        assert failed.status_code == 409 and "stays parked" in failed.get_data(as_text=True)
        cause["fixed"] = True
        done = post(admin, f"/admin/projections/parked/{parked_id}/retry")
        assert done.status_code == 200 and "was applied" in done.get_data(as_text=True)
    first, second = _projection_events("test-prices")
    assert (first.payload["applied"], second.payload["applied"]) == (False, True)
    assert second.metadata["actor"] == first.metadata["actor"]
    assert second.metadata["actor"].startswith("user:")


def test_cli_skip_and_retry_record_the_operator(app: Any, runner: Any) -> None:
    with projection("test-prices", ["price.changed"], _fail):
        first = _parked_one()
        assert runner.invoke(args=["projections", "retry", str(first)]).exit_code != 0
        result = runner.invoke(args=["projections", "skip", str(first)])
        assert result.exit_code == 0 and f"parked event {first} skipped" in result.output
        assert runner.invoke(args=["projections", "skip", str(first)]).exit_code != 0
    retried, skipped = _projection_events("test-prices")
    assert retried.payload["applied"] is False and retried.metadata["actor"].startswith("cli:")
    assert skipped.type == "projection.parked-event-skipped"


def test_queues_page_and_failed_mail_retry(
    admin: FlaskClient, smtp: SmtpServer, work: Any, make_config: Any, app: Any
) -> None:
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=smtp.port, mail_max_attempts=1
    )
    smtp.stop()
    outbox_id = _record(to="ada@example.com")
    work()
    assert _row(outbox_id).status == "failed"
    html = admin.get("/admin/queues").get_data(as_text=True)
    assert 'data-testid="admin-queues"' in html and "default" in html
    assert f'data-mail-id="{outbox_id}"' in html
    assert "ada@example.com" not in html and "secret-token" not in html  # no content
    smtp.start()
    resp = post(admin, f"/admin/queues/mails/{outbox_id}/retry", htmx=True)
    assert resp.status_code == 200 and "The mail is queued again." in resp.get_data(as_text=True)
    work()
    assert _row(outbox_id).status == "sent"
    with db.reading() as conn:
        (retried,) = read_stream(conn, StreamId("default", "mail", str(outbox_id)))
    assert retried.type == "mail.retried" and retried.metadata["actor"].startswith("user:")
    assert post(admin, f"/admin/queues/mails/{outbox_id}/retry").status_code == 409


def test_queues_page_says_when_redis_is_unreachable(
    admin: FlaskClient, app: Any, make_config: Any
) -> None:
    app.config["APP_CONFIG"] = make_config(redis_url="redis://127.0.0.1:1/0")
    try:
        html = admin.get("/admin/queues").get_data(as_text=True)
    finally:
        app.config["APP_CONFIG"] = make_config()
    assert "Redis is unreachable" in html
