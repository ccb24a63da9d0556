"""Restrict processing: signed out everywhere, sign-in refused with the text
(only after the right password), no mails but the lawful notices, lifted only
by an operator (`flask users lift-restriction`), and only from active."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from tests.support.accounts import PASSWORD, login, mails, user_row
from tests.support.web import post
from webapp.accounts import deletion
from webapp.accounts.users import stream_of
from webapp.core import db
from webapp.eventstore import read_stream
from webapp.mail.outbox.tables import mail_outbox
from webapp.privacy.tables import export_jobs

RESTRICTED = "Your account is restricted. Contact support to lift the restriction."


def _kinds() -> list[str]:
    with db.reading() as conn:
        return list(conn.execute(select(mail_outbox.c.kind).order_by(mail_outbox.c.id)).scalars())


def test_restrict_signs_out_everywhere_and_sign_in_is_refused(
    app: Any, client: Any, user: Any, other_client: Any
) -> None:
    login(other_client, "ada@example.com")
    assert other_client.get("/privacy").status_code == 200
    answer = post(client, "/privacy/restrict", htmx=True, current_password=PASSWORD)
    assert answer.status_code == 200 and answer.headers["HX-Redirect"] == "/login"
    landing = client.get("/login").get_data(as_text=True)
    assert RESTRICTED in landing
    for browser in (client, other_client):  # this browser and every other one
        assert browser.get("/privacy").status_code == 302
    refused = login(app.test_client(), "ada@example.com")
    assert refused.status_code == 403 and RESTRICTED in refused.get_data(as_text=True)
    wrong = login(app.test_client(), "ada@example.com", "not the password at all")
    assert RESTRICTED not in wrong.get_data(as_text=True)  # nothing told without the password
    assert user_row("ada@example.com").status == "restricted"


def test_wrong_or_missing_password_is_an_error_at_the_field(client: Any, user: Any) -> None:
    missing = post(client, "/privacy/restrict", htmx=True, current_password="")
    assert missing.status_code == 422 and "Enter your current password." in missing.get_data(
        as_text=True
    )
    wrong = post(client, "/privacy/restrict", current_password="not the password at all")
    html = wrong.get_data(as_text=True)
    assert wrong.status_code == 422 and "<html" in html and 'aria-invalid="true"' in html
    assert user_row("ada@example.com").status == "active"


def test_no_mail_for_a_restricted_user_but_the_lawful_notices(
    app: Any, client: Any, user: Any, runner: Any, work: Any
) -> None:
    post(client, "/privacy/restrict", current_password=PASSWORD)
    anonymous = app.test_client()
    post(anonymous, "/reset-password", email="ada@example.com")  # would send a link
    post(anonymous, "/register", email="ada@example.com", password=PASSWORD, confirm=PASSWORD)
    assert _kinds() == ["verification", "restricted"]
    result = runner.invoke(
        args=["users", "lift-restriction", "ada@example.com", "--operator", "sam"]
    )
    assert result.exit_code == 0, result.output
    assert "restriction lifted" in result.output
    assert _kinds()[-1] == "restriction-lifted"
    work()
    subjects = [m["Subject"] for m in mails(app)]
    assert "Your account is restricted" in subjects
    assert "The restriction of your account is lifted" in subjects


def test_lift_by_cli_lets_the_user_sign_in_again(
    client: Any, user: Any, runner: Any, app: Any
) -> None:
    post(client, "/privacy/restrict", current_password=PASSWORD)
    assert runner.invoke(args=["users", "lift-restriction", "nobody@example.com"]).exit_code != 0
    lifted = runner.invoke(
        args=["users", "lift-restriction", "ADA@example.com", "--operator", "sam"]
    )
    assert lifted.exit_code == 0
    again = runner.invoke(args=["users", "lift-restriction", "ada@example.com"])
    assert again.exit_code != 0 and "not restricted" in again.output
    assert login(client, "ada@example.com").status_code == 302  # a known browser: no alert
    with db.reading() as conn:
        last = read_stream(conn, stream_of("default", user.id))[-1]
    assert last.type == "user.restriction-lifted" and last.metadata["actor"] == "cli:sam"


def test_restriction_and_deletion_exclude_each_other(client: Any, user: Any) -> None:
    post(client, "/privacy/delete", current_password=PASSWORD)
    refused = post(client, "/privacy/restrict", htmx=True, current_password=PASSWORD)
    assert refused.status_code == 422
    assert "Cancel the deletion first." in refused.get_data(as_text=True)
    assert user_row("ada@example.com").status == "deletionRequested"


def test_while_restricted_a_deletion_request_is_refused(client: Any, user: Any) -> None:
    post(client, "/privacy/restrict", current_password=PASSWORD)
    outcome = deletion.request_deletion(user_row("ada@example.com"), PASSWORD)
    assert not outcome.ok and outcome.key == "privacy.delete.restricted"
    assert user_row("ada@example.com").status == "restricted"


def test_an_export_requested_before_restricting_is_not_built(
    client: Any, user: Any, work: Any, app: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    post(client, "/privacy/restrict", current_password=PASSWORD)
    work()
    with db.reading() as conn:
        (job,) = list(conn.execute(select(export_jobs)))
    assert job.status == "failed" and job.error == "restricted"
    assert list(Path(app.config["APP_CONFIG"].exports_path).glob("*.zip")) == []
    assert "export-failed" not in _kinds()  # no mail while restricted
