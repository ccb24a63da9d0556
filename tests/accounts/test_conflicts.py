"""A command that meets a concurrent change to the same account is
retried once on fresh state, else answered 409 with a banner; never 500."""

from __future__ import annotations

import logging
import threading
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from tests.support.accounts import PASSWORD, user_row
from tests.support.web import csrf_token, post
from webapp.accounts.tables import users
from webapp.core import db

CONFLICT_EN = "Your account was changed in another window. Please try again."
CONFLICT_DE = "Ihr Konto wurde in einem anderen Fenster geändert. Bitte versuchen Sie es erneut."


def _set_version(user_id: str, version: int) -> None:
    """What a concurrent writer leaves behind for a command that read before it:
    the stream has moved on past the version the command expects."""
    with db.transaction() as conn:
        conn.execute(update(users).where(users.c.id == user_id).values(version=version))


def test_a_change_that_keeps_conflicting_answers_409_and_changes_nothing(
    client: FlaskClient, user: Any
) -> None:
    _set_version(user.id, user.version - 1)
    r = post(
        client,
        "/profile/email",
        htmx=True,
        new_email="new@example.com",
        current_password=PASSWORD,
    )
    assert r.status_code == 409
    assert CONFLICT_EN in r.get_data(as_text=True)
    assert r.get_data(as_text=True).lstrip().startswith('<section id="profile-email"')
    assert user_row("ada@example.com") is not None  # nothing changed


def test_the_conflict_banner_is_german_too(client: FlaskClient, user: Any) -> None:
    assert post(client, "/profile/language", language="de").status_code == 200
    fresh = user_row("ada@example.com")
    _set_version(user.id, fresh.version - 1)
    r = post(client, "/profile/sessions")  # no JavaScript: the whole page
    assert r.status_code == 409
    assert CONFLICT_DE in r.get_data(as_text=True)


class _CatchUp(logging.Handler):
    """When the command reports its first conflict, the other writer's change is
    in the read model: the retry then runs on fresh state."""

    def __init__(self, user_id: str, version: int) -> None:
        super().__init__()
        self.user_id, self.version, self.conflicts = user_id, version, 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "account command met a concurrent change":
            self.conflicts += 1
            _set_version(self.user_id, self.version)


def test_a_single_conflict_is_retried_and_the_change_is_made(
    client: FlaskClient, user: Any
) -> None:
    catch_up = _CatchUp(user.id, user.version)
    logger = logging.getLogger("webapp.accounts.result")
    logger.addHandler(catch_up)
    _set_version(user.id, user.version - 1)
    try:
        r = post(
            client,
            "/profile/email",
            htmx=True,
            new_email="new@example.com",
            current_password=PASSWORD,
        )
    finally:
        logger.removeHandler(catch_up)
    assert catch_up.conflicts == 1
    assert r.status_code == 200
    assert user_row("new@example.com") is not None


def test_eight_parallel_change_email_submits_never_answer_500(
    app: Flask, client: FlaskClient, user: Any
) -> None:
    token = csrf_token(client, "/profile")
    cookie = client.get_cookie("session")
    assert cookie is not None
    start = threading.Barrier(8)
    answers: list[tuple[int, str]] = []

    def submit(i: int) -> None:
        browser = FlaskClient(app, app.response_class, use_cookies=True)
        browser.set_cookie("session", cookie.value)
        start.wait()
        r = browser.post(
            "/profile/email",
            data={
                "csrf_token": token,
                "new_email": f"ada{i % 2}@example.org",  # double clicks on two tabs
                "current_password": PASSWORD,
            },
            headers={"HX-Request": "true"},
        )
        answers.append((r.status_code, r.get_data(as_text=True)))

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(answers) == 8
    codes = sorted(code for code, _ in answers)
    assert 500 not in codes, codes
    assert set(codes) <= {200, 409, 422, 429}, codes
    assert codes.count(200) >= 1
    for code, html in answers:
        if code == 409:
            assert CONFLICT_EN in html
    # The account ended on exactly one of the addresses, consistently.
    assert (user_row("ada0@example.org") is None) != (user_row("ada1@example.org") is None)
