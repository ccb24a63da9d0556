"""What a signed-in request costs the database, and that what makes it cheap
never shows stale data or accepts a session the server has ended.

Counted with SQLAlchemy's cursor events on the real engine (SQLite or
PostgreSQL): a behaviour check, not a timing one (timings live in bench/web.py).
"""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.helpers import statements
from tests.support.accounts import PASSWORD, login, register
from tests.support.web import csrf_token, post
from webapp.admin import grants

# A signed-in GET /profile: one statement, the session check, which reads the
# user together with every live sign-in row of theirs: the browser's own (the
# check) and the rest for the Your devices list (other browsers sign in and out
# without an event of the account, so the kept page is filed under it too).
# SQLite adds a BEGIN (read transactions).
MAX_STATEMENTS = 2


def device_reads(sql: list[str]) -> list[str]:
    return [s for s in sql if s.startswith("SELECT") and "FROM user_sessions" in s]


def user_reads(sql: list[str]) -> list[str]:
    return [s for s in sql if s.startswith("SELECT") and " FROM users" in s]


def real(sql: list[str]) -> list[str]:
    return [s for s in sql if not s.startswith("BEGIN")]


def test_get_profile_loads_the_user_once_in_one_statement(
    app: Any, client: FlaskClient, user: Any
) -> None:
    app.extensions["profile.blank_pages"].clear()
    for htmx in (False, True, False):  # first render, htmx request, kept page
        with statements() as sql:
            resp = client.get("/profile", headers={"HX-Request": "true"} if htmx else {})
        assert resp.status_code == 200
        assert "ada@example.com</strong>" in resp.get_data(as_text=True)
        assert len(user_reads(sql)) == 1, sql
        assert "user_sessions" in user_reads(sql)[0]  # the session check is that one read
        assert not device_reads(sql), sql  # the device list came with it
        assert len(real(sql)) == 1, sql
        assert len(sql) <= MAX_STATEMENTS, sql


def test_a_refused_form_loads_the_user_once(client: FlaskClient, user: Any) -> None:
    token = csrf_token(client, "/profile")
    with statements() as sql:
        resp = client.post(
            "/profile/email",
            data={"new_email": "someone@example.com", "current_password": ""},
            headers={"HX-Request": "true", "X-CSRFToken": token},
        )
    assert resp.status_code == 422
    assert "Enter your current password." in resp.get_data(as_text=True)
    assert len(user_reads(sql)) == 1 and len(real(sql)) == 1, sql


def test_the_page_shows_a_change_at_once_in_every_signed_in_browser(
    client: FlaskClient, user: Any, other_client: FlaskClient
) -> None:
    assert login(other_client, "ada@example.com").status_code == 302
    for c in (client, other_client):  # both browsers have their page rendered and kept
        assert "Not verified" in c.get("/profile").get_data(as_text=True)

    assert post(client, "/profile/language", language="de").status_code == 200
    for c in (client, other_client):
        html = c.get("/profile").get_data(as_text=True)
        assert 'lang="de"' in html and "Nicht bestätigt" in html

    resp = post(
        client,
        "/profile/email",
        htmx=True,
        new_email="ada.new@example.com",
        current_password=PASSWORD,
    )
    assert resp.status_code == 200
    for c in (client, other_client):
        html = c.get("/profile").get_data(as_text=True)
        assert "ada.new@example.com</strong>" in html
        assert "ada@example.com</strong>" not in html


def test_a_signed_out_session_cookie_is_refused_though_its_page_was_rendered(
    app: Any, client: FlaskClient, user: Any
) -> None:
    assert client.get("/profile").status_code == 200
    copied = client.get_cookie("session")
    assert copied is not None
    token = csrf_token(client, "/profile")
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302

    thief = app.test_client()
    thief.set_cookie("session", copied.value)
    resp = thief.get("/profile")
    assert resp.status_code == 302
    assert resp.headers["Location"].startswith("/login")


def test_another_account_never_gets_the_first_ones_sections(
    app: Any, client: FlaskClient, user: Any
) -> None:
    assert "ada@example.com</strong>" in client.get("/profile").get_data(as_text=True)
    second = app.test_client()
    assert register(second, "grace@example.com").status_code == 200
    assert login(second, "grace@example.com").status_code == 302
    html = second.get("/profile").get_data(as_text=True)
    assert "grace@example.com</strong>" in html and "ada@example.com" not in html


def test_an_admin_grant_shows_on_the_kept_page_at_once(client: FlaskClient, user: Any) -> None:
    """The nav shows the console link from the user's row; a grant is an event
    of the account, so it moves the version the kept page is filed under."""
    nav = 'data-testid="nav-admin"'
    assert nav not in client.get("/profile").get_data(as_text=True)  # kept now
    assert grants.set_admin("ada@example.com", True, actor="test")
    assert nav in client.get("/profile").get_data(as_text=True)
    assert grants.set_admin("ada@example.com", False, actor="test")
    assert nav not in client.get("/profile").get_data(as_text=True)
