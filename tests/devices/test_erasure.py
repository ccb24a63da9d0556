"""Deletion erases the devices too (issue 21, point 8): the sign-in rows with
their browser, system and address, and the browsers the account was known in;
the device events' details are sealed with the user's key, which erasure
destroys. The export lists them while the account exists."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from tests.devices.helpers import FIREFOX_WINDOWS, signed_in
from tests.support.accounts import PASSWORD, login, register, user_row
from tests.support.web import post
from webapp.accounts import erase_accounts
from webapp.accounts import events as ev
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import stream_of
from webapp.core import db
from webapp.devices.tables import known_devices
from webapp.eventstore import read_stream


def rows(table: Any) -> list[Any]:
    with db.reading() as conn:
        return list(conn.execute(select(table)))


def test_erasure_removes_every_device_and_sign_in(
    app: Any, clock: Any, client: FlaskClient
) -> None:
    assert register(client, "ada@example.com").status_code == 200
    assert login(client, "ada@example.com").status_code == 302
    signed_in(app, agent=FIREFOX_WINDOWS, address="198.51.100.4")
    bob = app.test_client()
    assert register(bob, "bob@example.com").status_code == 200
    assert login(bob, "bob@example.com").status_code == 302
    assert len(rows(known_devices)) == 3 and len(rows(user_sessions)) == 3
    with db.reading() as conn:
        ada = read_stream(conn, stream_of("default", user_row("ada@example.com").id))
    new_device = [e for e in ada if e.type == ev.NEW_DEVICE_SIGNED_IN]
    assert new_device and "Firefox" not in str(new_device[0].payload)  # sealed

    assert post(client, "/profile/delete", current_password=PASSWORD).status_code == 200
    clock.advance(timedelta(days=14, seconds=1))
    assert erase_accounts.erase_due("default", clock.now()) == 1
    assert len(rows(known_devices)) == 1 and len(rows(user_sessions)) == 1  # bob's only
    assert bob.get("/profile").status_code == 200
