"""One account per address. An IDN domain in Unicode and in `xn--`
form is one address; local parts that mix scripts or use look-alike
compatibility forms are refused with a clear message."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from tests.support.accounts import PASSWORD, login, register, user_row
from tests.support.web import csrf_token, post
from webapp.accounts import addresses
from webapp.accounts.tables import users
from webapp.core import db

LOOK_ALIKE_EN = "Please use an address without look-alike characters."
LOOK_ALIKE_DE = "Bitte verwenden Sie eine Adresse ohne verwechselbare Zeichen."


def _accounts() -> int:
    with db.reading() as conn:
        return int(conn.execute(select(func.count()).select_from(users)).scalar_one())


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("ada@müller.example", "ada@xn--mller-kva.example"),
        ("ada@xn--mller-kva.example", "ADA@MÜLLER.EXAMPLE"),
        ("ada@bücher.de", "Ada@XN--BCHER-KVA.DE"),
    ],
)
def test_unicode_and_xn_forms_of_a_domain_are_one_account(
    client: Any, first: str, second: str
) -> None:
    assert register(client, first).status_code == 200
    assert register(client, second).status_code == 200  # the same neutral answer
    assert _accounts() == 1
    assert login(client, second).status_code == 302  # signs in to the one account


def test_the_address_is_stored_in_one_canonical_form() -> None:
    assert addresses.normalize("Ada@XN--MLLER-KVA.example") == "ada@müller.example"
    assert addresses.normalize("ada@müller.example") == "ada@müller.example"


@pytest.mark.parametrize(
    "address",
    [
        "p\u0430ypal@example.com",  # Cyrillic a among Latin letters
        "\u0430da@example.com",
        "ad\u03b1@example.com",  # Greek alpha
        "\uff41\uff44\uff41@example.com",  # full-width "ada"
        "ada@p\u0430ypal.com",  # a domain label that mixes scripts
    ],
)
def test_look_alike_addresses_are_refused_at_sign_up(client: Any, address: str) -> None:
    r = register(client, address)
    assert r.status_code == 422
    assert LOOK_ALIKE_EN in r.get_data(as_text=True)
    assert _accounts() == 0


def test_a_single_script_address_is_fine(client: Any) -> None:
    assert register(client, "иван@пример.рф").status_code == 200
    assert user_row("иван@пример.рф") is not None


def test_look_alike_refusal_in_german_and_on_email_change(client: Any, user: Any) -> None:
    r = post(
        client,
        "/profile/email",
        htmx=True,
        new_email="\u0430da@example.com",
        current_password=PASSWORD,
    )
    assert r.status_code == 422
    assert LOOK_ALIKE_EN in r.get_data(as_text=True)
    post(client, "/profile/language", language="de")
    r = client.post(
        "/profile/email",
        data={
            "csrf_token": csrf_token(client, "/profile"),
            "new_email": "p\u0430ypal@example.com",
            "current_password": PASSWORD,
        },
    )
    assert r.status_code == 422
    assert LOOK_ALIKE_DE in r.get_data(as_text=True)


def test_changing_to_the_xn_form_of_a_taken_address_is_refused(
    client: Any, other_client: Any, user: Any
) -> None:
    register(other_client, "bob@müller.example")
    r = post(
        client,
        "/profile/email",
        htmx=True,
        new_email="bob@xn--mller-kva.example",
        current_password=PASSWORD,
    )
    assert r.status_code == 422
    assert user_row("ada@example.com") is not None
