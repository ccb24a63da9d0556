"""The privacy page kept per browser session (webapp/privacy/views/center.py,
`blank_page`): it is always exactly the page rendered afresh, a change shows
on the very next request (also changes made without an event of the account:
a mail recorded, the export built by the worker, its expiry passing, its file
deleted), and it never outlives the session check or crosses accounts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from tests.helpers import statements
from tests.support.accounts import login, register, user_row
from tests.support.web import csrf_token, post, without_csrf
from webapp import create_app
from webapp.accounts import registration
from webapp.core import db
from webapp.mail.outbox import store
from webapp.privacy import activity, exports, shown
from webapp.privacy.jobs import clean_files


def _kept(client: FlaskClient) -> str:
    """GET /privacy three times: the last two are the kept page, byte for byte
    (the first may be the one that gives the browser session its CSRF secret)."""
    answers = [client.get("/privacy") for _ in range(3)]
    assert all(a.status_code == 200 for a in answers)
    assert all(a.headers["Cache-Control"] == "no-store" for a in answers)
    assert answers[1].get_data() == answers[2].get_data()
    pages = {without_csrf(a.get_data(as_text=True)) for a in answers}
    assert len(pages) == 1
    return pages.pop()


def _fresh(client: FlaskClient) -> str:
    """The page rendered from its own reads, never kept (an empty cursor)."""
    resp = client.get("/privacy?before=")
    assert resp.status_code == 200
    return without_csrf(resp.get_data(as_text=True))


def _same_as_fresh(client: FlaskClient) -> str:
    page = _kept(client)
    assert page == _fresh(client)
    return page


def _record_mail(user: Any, kind: str = registration.VERIFICATION_RESEND) -> None:
    """A mail for the user recorded as a worker does: no event of the account."""
    with db.transaction() as conn:
        store.record(
            conn,
            store.Mail(to="ada@example.com", subject="s", body="b"),
            tenant_id=user.tenant_id,
            user_id=user.id,
            kind=kind,
        )


def test_the_one_statement_reads_what_the_separate_reads_read(
    client: FlaskClient, user: Any, clock: Any
) -> None:
    for _ in range(23):  # more than a page, all at one instant (the frozen clock)
        _record_mail(user)
    exports.request_export(user)
    row = user_row("ada@example.com")
    read = shown.read(row)
    with db.reading() as conn:
        assert read.job == exports.latest(conn, row)
        assert read.activity == activity.page(conn, row)
    assert read.activity.next_before is not None and len(read.activity.entries) == 20


def test_the_kept_page_is_the_page_rendered_afresh_in_every_state(
    app: Any, client: FlaskClient, user: Any, work: Any, clock: Any
) -> None:
    assert "Request data export" in _same_as_fresh(client)
    post(client, "/privacy/export", htmx=True)
    assert "Your export is being prepared." in _same_as_fresh(client)
    work()
    assert "Your export is ready." in _same_as_fresh(client)
    for _ in range(25):
        post(client, "/profile/sessions", htmx=True)
    assert 'data-testid="privacy-activity-more"' in _same_as_fresh(client)
    assert post(client, "/profile/language", language="de").status_code == 200
    assert 'lang="de"' in _same_as_fresh(client)
    clock.advance(timedelta(days=7, minutes=1))
    assert "Ihr letzter Export ist abgelaufen." in _same_as_fresh(client)


def test_changes_without_an_event_of_the_account_show_at_once(
    app: Any, client: FlaskClient, user: Any, work: Any, clock: Any
) -> None:
    page = _kept(client)
    assert page.count('data-testid="privacy-activity-item"') == 2
    _record_mail(user, registration.VERIFICATION_REMINDER)
    assert _kept(client).count('data-testid="privacy-activity-item"') == 3

    post(client, "/privacy/export", htmx=True)
    assert "Your export is being prepared." in _kept(client)
    work()  # the worker builds it: the job's row changes
    page = _kept(client)
    assert "Your export is ready." in page and "Download export" in page

    folder = Path(app.config["APP_CONFIG"].exports_path)
    (zipped,) = folder.glob("*.zip")
    zipped.unlink()  # the file is gone, its row unchanged
    page = _kept(client)
    assert "Your last export has expired." in page and "Download export" not in page
    assert page == _fresh(client)


def test_the_expiry_passing_shows_at_once(
    client: FlaskClient, user: Any, work: Any, clock: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    work()
    assert "Download export" in _kept(client)
    clock.advance(timedelta(days=7, minutes=1))  # no row changes, the file is still there
    page = _kept(client)
    assert "Your last export has expired." in page and "Download export" not in page
    assert clean_files(clock.now()) == 1
    assert page == _kept(client)


def test_a_change_made_in_another_process_shows_at_once(
    client: FlaskClient, user: Any, make_config: Any
) -> None:
    """Two app instances on one database (two gunicorn workers): an export
    requested in one shows on this browser's next request in the other."""
    assert "Request data export" in _kept(client)
    elsewhere = create_app(make_config()).test_client()
    assert login(elsewhere, "ada@example.com").status_code == 302
    assert post(elsewhere, "/privacy/export", htmx=True).status_code == 200
    assert "Your export is being prepared." in _kept(client)


def test_a_signed_out_session_is_refused_though_its_page_was_kept(
    app: Any, client: FlaskClient, user: Any
) -> None:
    _kept(client)
    copied = client.get_cookie("session")
    assert copied is not None
    token = csrf_token(client, "/privacy")
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302
    thief = app.test_client()
    thief.set_cookie("session", copied.value)
    resp = thief.get("/privacy")
    assert resp.status_code == 302 and resp.headers["Location"].startswith("/login")


def test_another_account_never_gets_the_first_ones_page(
    app: Any, client: FlaskClient, user: Any
) -> None:
    post(client, "/privacy/export", htmx=True)
    assert "Your export is being prepared." in _kept(client)
    second = app.test_client()
    assert register(second, "grace@example.com").status_code == 200
    assert login(second, "grace@example.com").status_code == 302
    page = _kept(second)
    assert "Request data export" in page and "being prepared" not in page
    assert "ada@example.com" not in page


def test_a_kept_page_costs_the_session_check_and_one_read(client: FlaskClient, user: Any) -> None:
    _kept(client)
    with statements() as sql:
        assert client.get("/privacy").status_code == 200
    real = [s for s in sql if not s.startswith("BEGIN")]
    assert len(real) == 2, sql
    assert (
        "FROM export_jobs" in real[1] and "FROM events" in real[1] and "FROM mail_outbox" in real[1]
    )
