"""The current-password limit (issue 21, point 6): 5 *failed* checks per minute
per signed-in user. A correct password, and a submit with none typed, cost
nothing; wrong ones count, in a submit refused for another reason too (issue
34, point 6: the docs' table of what each submit costs is submitted row by
row), and at the same moment too."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.support.accounts import NEW_PASSWORD, PASSWORD, login, register, user_row
from tests.support.web import post
from webapp import create_app
from webapp.accounts import change_email, passwords, ratelimit
from webapp.core.config import ROOT

LIMITED = "Too many attempts"


def change_password(client: FlaskClient, current: str, new: str, confirm: str = "") -> Any:
    return post(
        client,
        "/profile/password",
        htmx=True,
        current_password=current,
        new_password=new,
        confirm_password=confirm or new,
    )


def change_address(client: FlaskClient, address: str, current: str) -> Any:
    return post(client, "/profile/email", htmx=True, new_email=address, current_password=current)


def assert_not_limited(r: Any, status: int = 200) -> None:
    assert r.status_code == status, r.get_data(as_text=True)[:500]
    assert LIMITED not in r.get_data(as_text=True)


def test_the_issues_story_is_never_limited(client: Any, user: Any) -> None:
    """Change the password, then the email twice, then delete, within a minute."""
    assert_not_limited(change_password(client, PASSWORD, NEW_PASSWORD))
    assert_not_limited(change_address(client, "ada2@example.com", NEW_PASSWORD))
    assert_not_limited(change_address(client, "ada3@example.com", NEW_PASSWORD))
    r = post(client, "/profile/delete", htmx=True, current_password=NEW_PASSWORD)
    assert_not_limited(r)
    assert user_row("ada3@example.com").deletion_requested


def test_many_correct_checks_and_submits_without_a_password_cost_nothing(
    client: Any, user: Any
) -> None:
    for _ in range(3):  # the new passwords do not match: refused, the password was right
        r = change_password(client, PASSWORD, NEW_PASSWORD, confirm="something else entirely")
        assert_not_limited(r, 422)
        assert "The current password is not correct." not in r.get_data(as_text=True)
    for _ in range(3):  # an invalid address: the right password is checked with it
        assert_not_limited(change_address(client, "not an address", PASSWORD), 422)
    for _ in range(3):  # no current password at all
        assert_not_limited(change_address(client, "n@example.com", ""), 422)
    for _ in range(3):  # the same address: the service refuses after the right password
        assert_not_limited(change_address(client, "ada@example.com", PASSWORD), 422)
    for i in range(6):
        assert_not_limited(change_address(client, f"ada{i}@example.com", PASSWORD))
    assert_not_limited(change_password(client, PASSWORD, NEW_PASSWORD))
    r = post(client, "/privacy/restrict", htmx=True, current_password=NEW_PASSWORD)
    assert r.status_code == 200 and "HX-Redirect" in r.headers  # restricted, signed out


def test_five_wrong_passwords_on_any_form_give_the_limit(client: Any, user: Any) -> None:
    wrong = "wrong wrong wrong"
    answers = [
        change_password(client, wrong, NEW_PASSWORD),
        change_address(client, "n@example.com", wrong),
        post(client, "/profile/delete", htmx=True, current_password=wrong),
        post(client, "/privacy/restrict", htmx=True, current_password=wrong),
        # Refused for the new passwords too, but the wrong password was checked: it counts.
        change_password(client, wrong, NEW_PASSWORD, confirm="something else entirely"),
    ]
    for r in answers:
        assert r.status_code == 422
        assert "The current password is not correct." in r.get_data(as_text=True)
    for r in (  # even the right password, for a minute, on every form
        change_password(client, PASSWORD, NEW_PASSWORD),
        change_address(client, "n@example.com", PASSWORD),
        post(client, "/profile/delete", htmx=True, current_password=PASSWORD),
        post(client, "/privacy/restrict", htmx=True, current_password=PASSWORD),
    ):
        assert r.status_code == 429
        assert LIMITED in r.get_data(as_text=True)
    assert not user_row("ada@example.com").deletion_requested


def test_correct_checks_between_wrong_ones_do_not_count(client: Any, user: Any) -> None:
    for i in range(4):
        assert change_address(client, "n@example.com", "wrong wrong wrong").status_code == 422
        assert_not_limited(change_address(client, f"ada{i}@example.com", PASSWORD))
    assert change_address(client, "n@example.com", "wrong wrong wrong").status_code == 422
    assert change_address(client, "m@example.com", PASSWORD).status_code == 429


@pytest.fixture(params=["memory", "redis"])
def limited_app(request: Any, app: Flask, make_config: Any) -> Flask:
    """The app with its limits in this process or in the suite's real Redis."""
    storage = "memory://"
    if request.param == "redis":
        cfg = make_config()
        storage = ratelimit.storage_uri(dataclasses.replace(cfg, testing=False))
    limited = create_app(make_config(ratelimit_storage=storage))
    limited.test_client_class = app.test_client_class
    return limited


def test_wrong_passwords_at_the_same_moment_all_count(limited_app: Flask, monkeypatch: Any) -> None:
    """Two wrong passwords checked at once, after 3 failures: both pass the
    limit's test before either is counted, and both count (5: the limit)."""
    with limited_app.app_context():
        first, second = limited_app.test_client(), limited_app.test_client()
        assert register(first, "ada@example.com").status_code == 200
        for c in (first, second):
            assert login(c, "ada@example.com").status_code == 302
        for _ in range(3):
            assert change_address(first, "n@example.com", "wrong wrong wrong").status_code == 422

    both_checking = threading.Barrier(2, timeout=30)
    real_check = change_email.check_password

    def check_together(user: Any, password: str) -> bool:
        both_checking.wait()  # each request is past the limit's test, none counted yet
        return real_check(user, password)

    monkeypatch.setattr(change_email, "check_password", check_together)
    statuses: list[int] = []

    def attempt(c: FlaskClient) -> None:
        with limited_app.app_context():
            statuses.append(change_address(c, "n@example.com", "wrong wrong wrong").status_code)

    threads = [threading.Thread(target=attempt, args=(c,)) for c in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [422, 422]
    monkeypatch.setattr(change_email, "check_password", real_check)
    with limited_app.app_context():
        r = change_address(first, "n@example.com", PASSWORD)
    assert r.status_code == 429 and LIMITED in r.get_data(as_text=True)


# --- docs/accounts.md, "Rate limits": what each submit costs ------------------------
WRONG = "wrong wrong wrong"
MISMATCH = "something else entirely"
COSTS = re.compile(r"^\| (?P<submit>[^|]+?) \| (?P<checked>yes|no) \| (?P<counts>yes|no) \|$", re.M)


def _request_deletion(client: FlaskClient) -> None:
    r = post(client, "/profile/delete", htmx=True, current_password=PASSWORD)
    assert r.status_code == 200, r.get_data(as_text=True)[:500]


def _use_up_the_limit(client: FlaskClient) -> None:
    for _ in range(5):
        ratelimit.count("password-check", user_row("ada@example.com").id)


# Each row of the table: (setting it up, not measured; the submit, measured).
SUBMITS: dict[str, tuple[Callable[[FlaskClient], Any], Callable[[FlaskClient], Any]]] = {
    "a wrong current password": (
        lambda c: None,
        lambda c: change_password(c, WRONG, NEW_PASSWORD),
    ),
    "a wrong current password, and the new passwords do not match": (
        lambda c: None,
        lambda c: change_password(c, WRONG, NEW_PASSWORD, confirm=MISMATCH),
    ),
    "a wrong current password, and an invalid new address": (
        lambda c: None,
        lambda c: change_address(c, "not an address", WRONG),
    ),
    "the correct password": (
        lambda c: None,
        lambda c: change_address(c, "ada2@example.com", PASSWORD),
    ),
    "the correct password, and the new passwords do not match": (
        lambda c: None,
        lambda c: change_password(c, PASSWORD, NEW_PASSWORD, confirm=MISMATCH),
    ),
    "the correct password, and the address is the current one": (
        lambda c: None,
        lambda c: change_address(c, "ada@example.com", PASSWORD),
    ),
    "no current password typed": (
        lambda c: None,
        lambda c: change_address(c, "n@example.com", ""),
    ),
    "*Delete account* while a deletion is already requested": (
        _request_deletion,
        lambda c: post(c, "/profile/delete", htmx=True, current_password=WRONG),
    ),
    "any submit while the limit is used up (429)": (
        _use_up_the_limit,
        lambda c: change_password(c, WRONG, NEW_PASSWORD),
    ),
}


def documented_costs() -> dict[str, tuple[bool, bool]]:
    """The table under "Rate limits" in docs/accounts.md: submit -> (checked, counts)."""
    text = (ROOT / "docs" / "accounts.md").read_text()
    section = text[text.index("## Rate limits") :]
    section = section[: section.index("\n## ", 1)]
    return {
        m["submit"]: (m["checked"] == "yes", m["counts"] == "yes") for m in COSTS.finditer(section)
    }


def failures(app: Flask, user_id: str) -> int:
    limiter = app.extensions["accounts.limiter"]
    limit = ratelimit._limit("password-check")
    return int(limit.amount - limiter.get_window_stats(limit, "password-check", user_id).remaining)


def test_the_docs_table_of_costs_holds_exactly_the_submits_tested_here() -> None:
    assert set(documented_costs()) == set(SUBMITS)


@pytest.mark.parametrize("row", list(SUBMITS))
def test_a_submit_costs_what_the_docs_table_says(
    row: str, app: Flask, client: FlaskClient, user: Any, monkeypatch: Any
) -> None:
    documented = documented_costs()
    assert row in documented, f"docs/accounts.md, Rate limits: no row {row!r}"
    setup, submit = SUBMITS[row]
    setup(client)
    checks: list[str] = []
    real_verify = passwords.verify_password

    def verify(*args: Any) -> bool:
        checks.append(row)
        return bool(real_verify(*args))

    monkeypatch.setattr(passwords, "verify_password", verify)
    before = failures(app, user.id)
    r = submit(client)
    assert r.status_code in (200, 422, 429), r.get_data(as_text=True)[:500]
    assert (bool(checks), failures(app, user.id) > before) == documented[row]
    if documented[row][1]:
        assert "The current password is not correct." in r.get_data(as_text=True)
