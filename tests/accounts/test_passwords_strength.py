"""Weak passwords are refused with a reason, on sign-up and on change,
and the new password may not be the current one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import PASSWORD, register, user_row
from tests.support.web import post
from webapp.accounts import credentials

WEAK = {
    "aaaaaaaaaaaaaaa": "it repeats characters or words",
    "passwordpassword": "it repeats characters or words",
    "123456789012345": "it is made of common words, names or passwords",
    "abcdefghijklmnopqrs": "it is a sequence like abc or 1234",
    "asdfghjkl;asdfg": "it follows a keyboard pattern like qwerty",
}


@pytest.mark.parametrize("weak", sorted(WEAK))
def test_sign_up_refuses_an_easy_to_guess_password_and_says_why(client: Any, weak: str) -> None:
    r = register(client, "ada@example.com", weak)
    assert r.status_code == 422
    html = r.get_data(as_text=True)
    assert "This password is too easy to guess" in html
    assert WEAK[weak] in html
    assert user_row("ada@example.com") is None


@pytest.mark.parametrize("weak", sorted(WEAK))
def test_changing_to_an_easy_to_guess_password_is_refused(
    client: Any, user: Any, weak: str
) -> None:
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password=weak,
        confirm_password=weak,
    )
    assert r.status_code == 422
    assert WEAK[weak] in r.get_data(as_text=True)
    assert 'aria-invalid="true"' in r.get_data(as_text=True)


def test_the_new_password_must_differ_from_the_current_one(client: Any, user: Any) -> None:
    r = post(
        client,
        "/profile/password",
        htmx=True,
        current_password=PASSWORD,
        new_password=PASSWORD,
        confirm_password=PASSWORD,
    )
    assert r.status_code == 422
    assert "The new password must be different from the current one." in r.get_data(as_text=True)
    assert user_row("ada@example.com").password_hash == user.password_hash


def test_the_reason_is_german_for_a_german_page(client: Any) -> None:
    client.get("/register", headers={"Accept-Language": "de"})
    r = client.post(
        "/register",
        data={
            "csrf_token": _token(client),
            "email": "ada@example.com",
            "password": "aaaaaaaaaaaaaaa",
            "confirm": "aaaaaaaaaaaaaaa",
        },
        headers={"Accept-Language": "de"},
    )
    assert r.status_code == 422
    assert "Es wiederholt Zeichen oder Wörter." in r.get_data(as_text=True)


def _token(client: Any) -> str:
    from tests.support.web import csrf_token

    return csrf_token(client, "/register")


def test_check_new_password_is_the_one_rule_for_every_new_password(app: Any, user: Any) -> None:
    """The reset flow calls this with the stored hash (it knows no current password)."""
    same = credentials.check_new_password(user.email, PASSWORD, user.password_hash)
    assert same is not None and same.key == "password.errors.sameAsCurrent"
    weak = credentials.check_new_password(user.email, "passwordpassword", field="password")
    assert weak is not None and weak.key == "password.errors.weakRepeat"
    assert weak.field == "password"
    mail = credentials.check_new_password(user.email, "ada@example.com", user.password_hash)
    assert mail is not None and mail.key == "password.errors.sameAsEmail"
    assert (
        credentials.check_new_password(user.email, "mauve kettle drift", user.password_hash) is None
    )
