"""A process's engine replaced while a thread still holds one of its
connections (a request still streaming when a test makes the next app, a
restore that sets up the engine again): the connection is closed when it is
given back, never left open in the old pool for the garbage collector (whose
ResourceWarning then fails whatever runs at that moment)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from webapp.core import db


def closed(driver_connection: Any) -> bool:
    if isinstance(driver_connection, sqlite3.Connection):
        try:
            driver_connection.execute("SELECT 1")
        except sqlite3.ProgrammingError:  # "Cannot operate on a closed database."
            return True
        return False
    return bool(driver_connection.closed)  # psycopg


def test_a_connection_held_while_the_engine_is_replaced_is_closed_when_given_back(
    database_url: str,
) -> None:
    db.init_engine(database_url)
    held = db.get_engine().connect()
    driver = held.connection.driver_connection
    other = db.get_engine().connect()  # one in the old pool too, given back before
    other_driver = other.connection.driver_connection
    other.close()
    try:
        db.init_engine(database_url)  # the next app's engine
        assert closed(other_driver), "an idle connection is closed by the replacement"
        assert not closed(driver), "a connection in use is left to its holder"
        assert held.exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        held.close()
    assert closed(driver)
    with db.reading() as conn:  # the new engine serves
        assert conn.exec_driver_sql("SELECT 1").scalar() == 1


def test_the_replaced_engine_closes_what_it_hands_out_later(database_url: str) -> None:
    db.init_engine(database_url)
    old = db.get_engine()
    db.init_engine(database_url)
    late = old.connect()  # a thread that kept the old engine's object
    driver = late.connection.driver_connection
    late.close()
    assert closed(driver)


@pytest.fixture(autouse=True)
def _engine_back(database_url: str) -> Any:
    yield
    db.init_engine(database_url)  # as the next test's app would
