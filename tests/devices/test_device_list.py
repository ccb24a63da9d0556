"""Your devices (issue 21, point 4): every signed-in session listed with browser
and system from the user agent, the shortened address, signed in at, last
active (moved at most once a minute) and "This device"; one read per page."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient

from tests.devices.helpers import CHROME_LINUX, FIREFOX_WINDOWS, browser, handles, signed_in
from tests.helpers import statements
from tests.support.accounts import login, register
from tests.support.web import htmx_get
from webapp.accounts.tables import user_sessions
from webapp.core import db


def section(html: str) -> str:
    return html.split('<section id="profile-devices"')[1].split("</section>")[0]


def test_every_signed_in_browser_is_listed_with_browser_system_and_short_address(
    app: Any, client: FlaskClient, user: Any
) -> None:
    signed_in(app, agent=CHROME_LINUX, address="203.0.113.7")
    signed_in(app, agent=FIREFOX_WINDOWS, address="2001:db8:abcd:12::1")
    html = section(client.get("/profile").get_data(as_text=True))
    assert html.count('data-testid="device"') == 3
    assert "Chrome 120 (Linux)" in html and "Firefox 121 (Windows 10)" in html
    assert "203.0.113.x" in html and "203.0.113.7" not in html
    assert "2001:db8:abcd::/48" in html and "2001:db8:abcd:12" not in html
    assert html.count('data-testid="device-this"') == 1  # this browser only
    assert html.index("This device") < html.index("Chrome 120")  # listed first
    assert "Signed in at" in html and "Last active" in html
    assert len(handles(html)) == 2  # "Sign out" for each other device, not this one


def test_the_address_is_stored_shortened_never_in_full(app: Any, user: Any) -> None:
    signed_in(app, address="198.51.100.23")
    with db.reading() as conn:
        stored = set(conn.execute(user_sessions.select()).mappings().all()[-1].values())
    assert "198.51.100.x" in stored
    assert not any("198.51.100.23" in str(v) for v in stored)


def test_an_unknown_agent_and_address_show_as_unknown(app: Any, user: Any) -> None:
    c = browser(app, agent="", address="not-an-address")
    assert login(c, "ada@example.com").status_code == 302
    html = section(c.get("/profile").get_data(as_text=True))
    assert "Unknown browser (unknown system)" in html
    assert '<dd data-testid="device-address">Unknown</dd>' in html


def test_another_accounts_sessions_are_never_listed(
    app: Any, client: FlaskClient, user: Any
) -> None:
    bob = browser(app, agent=FIREFOX_WINDOWS)
    assert register(bob, "bob@example.com").status_code == 200
    assert login(bob, "bob@example.com").status_code == 302
    html = section(client.get("/profile").get_data(as_text=True))
    assert html.count('data-testid="device"') == 1 and "Firefox" not in html
    assert 'data-testid="devices-only-this"' in html


def _last_active(html: str) -> list[str]:
    return re.findall(r'data-testid="device-last-active"><time datetime="([^"]+)"', html)


def test_last_active_moves_at_most_once_a_minute(app: Any, clock: Any, client: FlaskClient) -> None:
    assert register(client, "ada@example.com").status_code == 200
    assert login(client, "ada@example.com").status_code == 302
    start = clock.now()
    clock.advance(30)
    with statements() as sql:
        client.get("/profile")
    assert not [s for s in sql if s.startswith("UPDATE user_sessions")]  # within the minute
    assert _last_active(client.get("/profile").get_data(as_text=True)) == [start.isoformat()]
    clock.advance(31)  # a minute and a second after the sign-in
    with statements() as sql:
        html = client.get("/profile").get_data(as_text=True)
        client.get("/profile")
    assert len([s for s in sql if s.startswith("UPDATE user_sessions")]) == 1  # one write
    assert _last_active(html) == [clock.now().isoformat()]


def test_the_kept_page_shows_a_new_sign_in_elsewhere_at_once(
    app: Any, client: FlaskClient, user: Any
) -> None:
    """The account's version does not move when another browser it knows signs
    in: the kept page is filed under the device list too."""
    assert section(client.get("/profile").get_data(as_text=True)).count('data-testid="device"') == 1
    signed_in(app)
    html = section(client.get("/profile").get_data(as_text=True))
    assert html.count('data-testid="device"') == 2


def test_an_expired_sign_in_is_not_listed(app: Any, clock: Any, client: FlaskClient) -> None:
    assert register(client, "ada@example.com").status_code == 200
    old = signed_in(app)
    clock.advance(timedelta(days=29))
    assert login(client, "ada@example.com").status_code == 302
    clock.advance(timedelta(days=2))  # the first sign-in's 30 days are over
    html = section(client.get("/profile").get_data(as_text=True))
    assert html.count('data-testid="device"') == 1
    assert old.get("/profile").status_code == 302


def test_the_section_answers_htmx_with_its_fragment(client: FlaskClient, user: Any) -> None:
    resp = htmx_get(client, "/profile")
    assert resp.status_code == 200 and 'id="profile-devices"' in resp.get_data(as_text=True)
