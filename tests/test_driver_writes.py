"""The single-event publish sent on the driver's cursor
(webapp/core/driver_writes.py, PostgreSQL): it stores and returns what the
statement sent through SQLAlchemy does, a driver error surfaces as
SQLAlchemy's with nothing written, a lost connection is never written to
twice and leaves the pool usable, and inside a transaction the statement
goes through SQLAlchemy as before."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DataError, DBAPIError

from tests.helpers import statements
from tests.support import pgbouncer
from webapp.core import db
from webapp.core.driver_reads import observed
from webapp.core.driver_writes import DriverWrite
from webapp.eventstore import StreamId, read_stream
from webapp.publish import publish


@pytest.fixture
def postgres(backend):
    if backend != "postgresql":
        pytest.skip("the driver path is PostgreSQL's single-statement publish")


def _stored(stream: StreamId) -> list:
    with db.reading() as conn:
        return read_stream(conn, stream)


def test_a_publish_on_the_driver_stores_what_the_sqlalchemy_path_stores(app, postgres):
    with db.reading() as conn:
        assert not observed(conn)
    quick = publish("order.paid", "order", "o-quick", {"amount": 1, "items": [1, 2]}, actor="ada")
    again = publish("order.paid", "order", "o-quick", {"amount": 2})
    with statements() as sent:  # a listener: the statement goes through SQLAlchemy
        seen = publish("order.paid", "order", "o-seen", {"amount": 1, "items": [1, 2]}, actor="ada")
    assert len(sent) == 1 and sent[0].startswith("WITH cur AS")
    assert (quick.version, again.version, seen.version) == (1, 2, 1)
    assert quick.position < again.position < seen.position
    for event in (quick, seen):
        [stored] = [e for e in _stored(event.stream) if e.id == event.id]
        assert stored == event  # position, version, payload, metadata, recorded_at
        assert stored.metadata["actor"] == "ada"
    assert [e.id for e in _stored(quick.stream)] == [quick.id, again.id]


def test_a_driver_error_is_sqlalchemys_error_and_writes_nothing(app, postgres):
    write = DriverWrite(
        text("INSERT INTO tenants (id, name, created_at) VALUES (:id, :name, now())")
    )
    tenant = f"t-{uuid.uuid4()}"
    with db.readers().connect() as conn:
        with pytest.raises(DataError):  # the server refuses: the column holds 200
            write.all(conn, {"id": tenant, "name": "x" * 201})
        count = text("SELECT count(*) FROM tenants WHERE id = :id")
        assert conn.execute(count, {"id": tenant}).scalar() == 0
    assert publish("order.paid", "order", "o-after", {}).version == 1  # the pool still works


def test_a_lost_connection_is_sqlalchemys_disconnect_and_not_sent_twice(app, postgres):
    if pgbouncer.wanted():
        pytest.skip("behind a pooler, which server connection a client has changes per transaction")
    write = DriverWrite(text("INSERT INTO tenants (id, name, created_at) VALUES (:id, :id, now())"))
    tenant = f"t-{uuid.uuid4()}"
    with db.readers().connect() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with db.reading() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(DBAPIError) as raised:
            write.all(conn, {"id": tenant})
    assert raised.value.connection_invalidated
    count = text("SELECT count(*) FROM tenants WHERE id = :id")
    with db.reading() as conn:  # nothing written, and a new connection answers
        assert conn.execute(count, {"id": tenant}).scalar() == 0


def test_inside_a_transaction_the_statement_goes_through_sqlalchemy(app, postgres):
    s = str(uuid.uuid4())
    write = DriverWrite(
        text("INSERT INTO tenants (id, name, created_at) VALUES (:id, :name, now())")
    )
    with pytest.raises(DataError), db.transaction() as conn:
        publish("order.paid", "order", s, {})
        write.all(conn, {"id": s, "name": "y" * 201})  # the server's own error, not "aborted"
    assert _stored(StreamId("default", "order", s)) == []
    with statements() as sent, db.transaction():
        publish("order.paid", "order", s, {})
    assert sent[0] == "BEGIN" and sent[1].startswith("WITH cur AS")
