"""The verification mail (recorded in the outbox with the registration or the
email change, retried by the outbox) and the workflow that waits 24 h for the
matching `user.email-verified` and records one reminder on timeout."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select

from tests.support.accounts import PASSWORD, body, link_in, mails, register, user_row
from tests.support.web import csrf_token, post
from webapp.accounts import verification_workflow
from webapp.core import db
from webapp.mail.outbox.jobs import sweep_outbox
from webapp.mail.outbox.tables import mail_outbox
from webapp.workflows.dispatch.sweep import resume_due_runs
from webapp.workflows.store.tables import workflow_runs


def _runs(name: str) -> list[Any]:
    with db.reading() as conn:
        return list(
            conn.execute(select(workflow_runs).where(workflow_runs.c.workflow_name == name))
        )


def _verification_mails(app: Any, to: str) -> list[Any]:
    return [m for m in mails(app) if m["To"] == to and "/verify-email/" in body(m)]


def _tick(clock: Any, work: Any, delta: timedelta) -> None:
    clock.advance(delta)
    resume_due_runs("default", clock.now())
    sweep_outbox(None, clock.now())
    work()


def test_registration_sends_the_mail_and_starts_the_reminder_run(
    app: Any, client: Any, work: Any
) -> None:
    register(client, "ada@example.com")
    work()
    assert len(_verification_mails(app, "ada@example.com")) == 1
    assert len(_runs("email-verification-registered")) == 1


def test_one_reminder_after_24_hours_without_verification(
    app: Any, client: Any, work: Any, clock: Any
) -> None:
    register(client, "ada@example.com")
    work()
    _tick(clock, work, timedelta(hours=23))
    assert len(_verification_mails(app, "ada@example.com")) == 1
    _tick(clock, work, timedelta(hours=1, minutes=1))
    sent = _verification_mails(app, "ada@example.com")
    assert len(sent) == 2 and "a reminder" in body(sent[-1])
    _tick(clock, work, timedelta(days=3))
    assert len(_verification_mails(app, "ada@example.com")) == 2  # only one reminder


def test_no_reminder_once_the_address_is_verified(
    app: Any, client: Any, work: Any, clock: Any
) -> None:
    register(client, "ada@example.com")
    work()
    link = link_in(_verification_mails(app, "ada@example.com")[0], "/verify-email/")
    assert client.post(link, data={"csrf_token": csrf_token(client)}).status_code == 200
    work()  # the wake-up projection sees user.email-verified
    _tick(clock, work, timedelta(seconds=1))
    _tick(clock, work, timedelta(hours=25))
    assert len(_verification_mails(app, "ada@example.com")) == 1


def test_email_change_starts_a_run_for_the_new_address(
    app: Any, client: Any, user: Any, work: Any
) -> None:
    work()
    post(
        client, "/profile/email", htmx=True, new_email="ada2@example.com", current_password=PASSWORD
    )
    work()
    assert len(_verification_mails(app, "ada2@example.com")) == 1
    assert len(_runs("email-verification-changed")) == 1


def test_a_failed_send_is_retried_by_the_outbox(
    app: Any, client: Any, work: Any, clock: Any, make_config: Any
) -> None:
    good = app.config["APP_CONFIG"]
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=1, smtp_timeout=1
    )
    register(client, "ada@example.com")
    work()
    assert _verification_mails(app, "ada@example.com") == []
    app.config["APP_CONFIG"] = good
    _tick(clock, work, timedelta(seconds=11))
    assert len(_verification_mails(app, "ada@example.com")) == 1


def test_the_reminder_step_run_twice_records_one_mail(app: Any, client: Any, work: Any) -> None:
    register(client, "ada@example.com")
    ada = user_row("ada@example.com")
    trigger = SimpleNamespace(tenant_id="default", aggregate_id=ada.id, version=1)
    ctx = SimpleNamespace(trigger=trigger)
    assert verification_workflow.send_reminder(ctx) == "recorded"
    assert verification_workflow.send_reminder(ctx) == "already recorded"  # a retried step
    with db.reading() as conn:
        kinds = list(conn.execute(select(mail_outbox.c.kind)).scalars())
    assert kinds.count("verification-reminder") == 1
