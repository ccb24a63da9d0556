"""The session check's statement sent on the driver's cursor
(webapp/core/driver_reads.py) gives what `conn.execute` gives, on SQLite and
PostgreSQL, whether or not something listens to the cursor events, and a
driver error surfaces as SQLAlchemy's, as for any other statement."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Column, MetaData, String, Table, bindparam, select
from sqlalchemy.exc import DBAPIError

from tests.helpers import statements
from tests.support.accounts import login
from webapp.accounts import signins
from webapp.core import clock, db
from webapp.core.driver_reads import DriverRead, observed


def _params(user: Any) -> dict[str, Any]:
    return {"tenant_id": user.tenant_id, "user_id": user.id, "now": clock.now()}


def test_rows_are_what_sqlalchemy_gives_with_and_without_listeners(
    app: Flask, client: FlaskClient, other_client: FlaskClient, user: Any
) -> None:
    assert login(other_client, "ada@example.com").status_code == 302  # two sign-ins
    read = signins._LIVE_USER_AND_SIGN_INS
    with db.reading() as conn:
        expected = [tuple(r) for r in conn.execute(read.stmt, _params(user)).all()]
    with db.reading() as conn:
        assert not observed(conn)
        quick = read.all(conn, _params(user))
    pooled = read.read(_params(user))  # on a pooled driver connection of its own
    with statements() as sql, db.reading() as conn:
        assert observed(conn)
        seen = read.all(conn, _params(user))
    with statements() as sql_too:
        seen_too = read.read(_params(user))
    assert len(expected) == 2
    assert [tuple(r) for r in quick] == [tuple(r) for r in seen] == expected
    assert [tuple(r) for r in pooled] == [tuple(r) for r in seen_too] == expected
    sent = " ".join(read.sql(conn.dialect).split())
    assert [s for s in sql if not s.startswith("BEGIN")] == [sent]
    assert [s for s in sql_too if not s.startswith("BEGIN")] == [sent]
    row = quick[0]
    assert row.email == "ada@example.com" and row.email_verified is False
    assert row.created_at.tzinfo is not None and row.sign_in_created_at.tzinfo is not None
    assert row._fields == tuple(read.stmt.selected_columns.keys())


def test_no_row_and_a_wrong_user_give_none(app: Flask, user: Any) -> None:
    assert signins.live_user(user.id, "not-a-sign-in-secret") is None
    assert signins.live_user_with_sign_ins("no-such-user", "x") is None


def test_a_driver_error_is_sqlalchemys_error(app: Flask) -> None:
    missing = Table("no_such_table", MetaData(), Column("id", String(36)))
    read = DriverRead(select(missing.c.id).where(missing.c.id == bindparam("id")))
    with pytest.raises(DBAPIError), db.reading() as conn:
        read.all(conn, {"id": "x"})
    with pytest.raises(DBAPIError):
        read.read({"id": "x"})
    with db.reading() as conn:  # the pool is still usable afterwards
        assert conn.exec_driver_sql("SELECT 1").scalar() == 1
