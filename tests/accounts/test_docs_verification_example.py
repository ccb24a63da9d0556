"""The email-verification example of docs/workflows.md, run as written against
the product's real events: it matches `user.email-verified` on user id and
address version, reminds once after 24 h, and stores no address anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from tests.support.accounts import PASSWORD, link_in, mails
from tests.support.web import csrf_token, post
from tests.test_docs_examples import of
from webapp.core import db
from webapp.core.config import ROOT
from webapp.eventstore import projections
from webapp.workflows.dispatch.sweep import resume_due_runs
from webapp.workflows.store.tables import workflow_runs

NAME = "verification-reminder"
NEW = "ada2@example.com"


@pytest.fixture
def example(app: Any) -> Iterator[None]:
    (block,) = [b for b in of("python", ROOT / "docs" / "workflows.md") if NAME in b.code]
    exec(compile(block.code, "docs/workflows.md", "exec"), {"__name__": "docs_example"})
    projections.ensure_cursors()
    yield
    wf.unregister(NAME)


def _run() -> Any:
    with db.reading() as conn:
        (row,) = conn.execute(select(workflow_runs).where(workflow_runs.c.workflow_name == NAME))
    return row


def _reminders(app: Any) -> list[Any]:
    return [m for m in mails(app) if m["Subject"] == "Still want to confirm your new address?"]


def _change_email(client: Any, work: Any) -> None:
    work()
    post(client, "/profile/email", htmx=True, new_email=NEW, current_password=PASSWORD)
    work()


def _tick(clock: Any, work: Any, delta: timedelta) -> None:
    clock.advance(delta)
    resume_due_runs("default", clock.now())
    work()


def test_reminder_after_24h_to_the_unconfirmed_address(app, client, user, work, clock, example):
    _change_email(client, work)
    assert _run().status == "suspended"
    _tick(clock, work, timedelta(hours=24, minutes=1))
    (reminder,) = _reminders(app)
    assert reminder["To"] == NEW
    run = _run()
    assert run.status == "completed" and run.results["return"] == {"verified": False}
    assert run.idempotency_key == f"{user.id}:{run.trigger_event_ref['version']}"
    assert "@" not in json.dumps(run.results)  # no address in results or key


def test_verifying_the_new_address_ends_the_run_without_reminder(
    app, client, user, work, clock, example
):
    _change_email(client, work)
    verify = [m for m in mails(app) if m["To"] == NEW and "/verify-email/" in str(m)]
    link = link_in(verify[0], "/verify-email/")
    assert client.post(link, data={"csrf_token": csrf_token(client, "/profile")}).status_code == 200
    work()  # the wake-up matches user_id + address_version
    _tick(clock, work, timedelta(seconds=1))
    _tick(clock, work, timedelta(hours=25))
    assert _reminders(app) == []
    run = _run()
    assert run.status == "completed" and run.results["return"] == {"verified": True}
