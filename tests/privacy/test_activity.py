"""Your activity: the user's own events in plain words, newest first, 20 a
page with Show more (keyset paging); nothing of another user, nothing internal,
never a raw event type."""

from __future__ import annotations

import re
from typing import Any

from tests.support.accounts import PASSWORD, login, register
from tests.support.web import htmx_get, post

ITEM = re.compile(
    r'data-testid="privacy-activity-item"[^>]*><span class="activity-what">([^<]+)</span>'
)


def _items(html: str) -> list[str]:
    return ITEM.findall(html)


def test_the_list_reads_in_plain_words_newest_first(client: Any, user: Any) -> None:
    post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password="tangerine submarine umbrella",
        confirm_password="tangerine submarine umbrella",
    )
    post(client, "/profile/sessions", htmx=True)
    html = client.get("/privacy").get_data(as_text=True)
    assert "Your activity" in html
    assert _items(html) == [
        "Signed out of other sessions",
        "Password change notice sent",
        "Password changed",
        "Verification email sent",
        "Account created",
    ]
    assert "user." not in html.split('id="privacy-activity"')[1].split("</section>")[0]
    assert "<time datetime=" in html


def test_nothing_of_another_user_and_no_bookkeeping(
    client: Any, user: Any, other_client: Any, app: Any, make_config: Any
) -> None:
    register(other_client, "bob@example.com")
    login(other_client, "bob@example.com")
    post(other_client, "/profile/sessions", htmx=True)
    # A password hash upgraded at sign-in is bookkeeping, not something the user did.
    app.config["APP_CONFIG"] = make_config(argon2_time_cost=2)
    same_browser = app.test_client()  # ada's browser (its device cookie): no new-device alert
    device = client.get_cookie("device")
    assert device is not None
    same_browser.set_cookie("device", device.value)
    login(same_browser, "ada@example.com")
    assert _items(client.get("/privacy").get_data(as_text=True)) == [
        "Verification email sent",
        "Account created",
    ]


def test_show_more_appends_the_next_twenty(client: Any, user: Any) -> None:
    for _ in range(44):  # + the sign-up and its verification mail: 46 entries
        post(client, "/profile/sessions", htmx=True)
    page = client.get("/privacy").get_data(as_text=True)
    assert len(_items(page)) == 20 and "Show more" in page
    cursor = re.search(r'name="before" value="([\d-]+)"', page)
    assert cursor
    more = htmx_get(client, f"/privacy/activity?before={cursor.group(1)}")
    fragment = more.get_data(as_text=True)
    assert more.status_code == 200 and "<html" not in fragment
    assert fragment.lstrip().startswith("<li")
    assert len(_items(fragment)) == 20
    last = re.search(r'name="before" value="([\d-]+)"', fragment)
    assert last
    final = htmx_get(client, f"/privacy/activity?before={last.group(1)}").get_data(as_text=True)
    assert _items(final) == ["Signed out of other sessions"] * 4 + [
        "Verification email sent",
        "Account created",
    ]
    assert "Show more" not in final
    # Without JavaScript the button loads the page from that point on.
    nojs = client.get(f"/privacy/activity?before={cursor.group(1)}")
    assert nojs.status_code == 302 and "/privacy?before=" in nojs.headers["Location"]
    assert len(_items(client.get(nojs.headers["Location"]).get_data(as_text=True))) == 20


def test_a_hostile_cursor_is_refused_plainly(client: Any, user: Any) -> None:
    for bad in ("-1", "abc", "1 OR 1=1", "9" * 30):
        answer = htmx_get(client, f"/privacy/activity?before={bad}")
        assert answer.status_code == 400
        assert "This page of your activity does not exist." in answer.get_data(as_text=True)
    assert client.get("/privacy?before=abc").status_code == 200  # the page just starts at the top


def test_paging_loses_and_repeats_nothing_when_everything_happened_at_once(
    app: Any, clock: Any
) -> None:
    """The frozen clock: every entry has the same time; the cursor's tie-breaks
    (mails before events, then by id) still page through each entry once."""
    client = app.test_client()
    register(client, "ada@example.com")
    login(client, "ada@example.com")
    for _ in range(25):
        post(client, "/profile/sessions", htmx=True)
    seen = _items(client.get("/privacy").get_data(as_text=True))
    html = client.get("/privacy").get_data(as_text=True)
    while match := re.search(r'name="before" value="([\d-]+)"', html):
        html = htmx_get(client, f"/privacy/activity?before={match.group(1)}").get_data(as_text=True)
        seen += _items(html)
    assert len(seen) == 27
    assert seen[0] == "Verification email sent" and seen[-1] == "Account created"
