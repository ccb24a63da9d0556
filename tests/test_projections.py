"""Async projections: durable cursors, retries with backoff, parking, CLI."""

from __future__ import annotations

import logging

import psycopg
import pytest
from psycopg import errors as pg_errors
from sqlalchemy import insert, select
from sqlalchemy.exc import OperationalError

from tests.helpers import append_one, applied_table, projection
from tests.support import pgbouncer
from webapp.cli import projections_cli
from webapp.core import db
from webapp.eventstore import parked as parked_ops
from webapp.eventstore import projections, read_all


def recorder(name: str, table, fail_on: set[str] | None = None):  # type: ignore[no-untyped-def]
    def apply(conn, event):  # type: ignore[no-untyped-def]
        if fail_on is not None and event.payload.get("tag") in fail_on:
            raise ValueError("cannot apply this one: secret personal data")
        conn.execute(insert(table).values(projection=name, event_id=event.id))

    return apply


def applied_ids(table) -> list[str]:  # type: ignore[no-untyped-def]
    with db.reading() as conn:
        return [r.event_id for r in conn.execute(select(table).order_by(table.c.id))]


def test_projection_applies_each_event_once_and_keeps_its_cursor(app):
    with applied_table() as t, projection("p.once", ["thing.happened"], recorder("p.once", t)):
        ids = [append_one() for _ in range(3)]
        append_one("other.type")
        r1 = projections.run_projection(projections.get("p.once"))
        r2 = projections.run_projection(projections.get("p.once"))
        assert (r1.applied, r2.applied) == (3, 0)
        assert applied_ids(t) == ids


def test_projection_starting_from_now_skips_history(app):
    with applied_table() as t:
        append_one()
        with projection("p.now", ["thing.happened"], recorder("p.now", t), start="now"):
            projections.ensure_cursors()
            later = append_one()
            projections.run_projection(projections.get("p.now"))
            assert applied_ids(t) == [later]


def test_failing_event_is_retried_with_backoff_then_parked_and_later_events_still_apply(
    app, clock, runner
):
    fail = {"bad"}
    with (
        applied_table() as t,
        projection("p.park", ["thing.happened"], recorder("p.park", t, fail)),
    ):
        first = append_one(payload={"tag": "ok"})
        bad = append_one(payload={"tag": "bad"})
        after = append_one(payload={"tag": "ok"})
        p = projections.get("p.park")
        r = projections.run_projection(p, max_attempts=3)
        # The good event before the bad one is committed with the cursor.
        assert r.applied == 1 and r.retry_at is not None
        assert applied_ids(t) == [first]
        # Until the backoff has passed, nothing is retried.
        assert projections.run_projection(p, max_attempts=3).applied == 0
        clock.advance(1.1)
        r = projections.run_projection(p, max_attempts=3)
        assert r.parked == 0 and r.retry_at is not None
        clock.advance(2.1)
        r = projections.run_projection(p, max_attempts=3)
        assert r.parked == 1 and r.applied == 1
        assert applied_ids(t) == [first, after]
        with db.reading() as conn:
            (parked,) = parked_ops.list_parked(conn)
        assert (parked.projection, parked.event_id, parked.attempts) == ("p.park", bad, 3)
        # The error class is kept, never the raw message (it may hold personal data).
        assert parked.error_class == "ValueError"

        listing = runner.invoke(args=["projections", "parked"])
        assert bad in listing.output and "ValueError" in listing.output
        assert "secret" not in listing.output

        # Retrying while still broken keeps it parked.
        res = runner.invoke(args=["projections", "retry", str(parked.id)])
        assert res.exit_code != 0 and "failed again" in res.output
        fail.clear()  # "fixed"
        res = runner.invoke(args=["projections", "retry", str(parked.id)])
        assert res.exit_code == 0, res.output
        assert applied_ids(t) == [first, after, bad]
        with db.reading() as conn:
            assert parked_ops.list_parked(conn) == []
        res = runner.invoke(args=["projections", "retry", str(parked.id)])
        assert res.exit_code != 0 and "no parked event" in res.output


def test_status_shows_cursor_and_lag(app, runner):
    with applied_table() as t, projection("p.status", ["thing.happened"], recorder("p.status", t)):
        append_one()
        append_one()
        with db.reading() as conn:
            head = str(max(e.position for e in read_all(conn)))
        projections.ensure_cursors()
        out = runner.invoke(args=["projections", "status"]).output
        line = next(ln for ln in out.splitlines() if ln.startswith("p.status"))
        assert line.split()[1:4] == ["0", head, "2"]  # position, head, lag
        projections.run_all()
        out = runner.invoke(args=["projections", "status"]).output
        line = next(ln for ln in out.splitlines() if ln.startswith("p.status"))
        assert line.split()[1:4] == [head, head, "0"]


def test_cli_group_is_registered(app):
    assert "projections" in app.cli.commands
    assert projections_cli.name == "projections"


def failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "webapp.eventstore.projections"]


def test_a_run_that_cannot_read_the_safe_position_logs_what_the_database_said(
    app, monkeypatch, caplog
):
    """A database shutting down is named by its own error (class, SQLSTATE,
    message), not as "no safe position"; the statement and its parameters
    stay out of the line."""
    shutdown = pg_errors.AdminShutdown("terminating connection due to administrator command")
    wrapped = OperationalError("SELECT secret FROM events", {"after": "secret"}, shutdown)

    def fail(conn):  # type: ignore[no-untyped-def]
        raise wrapped

    monkeypatch.setattr(projections, "safe_position", fail)
    caplog.set_level(logging.WARNING, logger="webapp.eventstore.projections")
    assert projections.run_all() == projections.RunResult()
    [record] = failures(caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage() == "projection run failed: database unavailable"
    assert record.error_class == "AdminShutdown"  # type: ignore[attr-defined]
    assert record.sqlstate == "57P01"  # type: ignore[attr-defined]
    assert record.error == "terminating connection due to administrator command"  # type: ignore[attr-defined]
    assert "secret" not in str(record.__dict__)


def test_a_failure_that_is_not_an_outage_keeps_its_traceback(app, monkeypatch, caplog):
    def fail(conn):  # type: ignore[no-untyped-def]
        raise ValueError("not the database")

    monkeypatch.setattr(projections, "safe_position", fail)
    caplog.set_level(logging.WARNING, logger="webapp.eventstore.projections")
    projections.run_all()
    [record] = failures(caplog)
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert record.getMessage() == "projection run failed while reading the safe position"
    assert record.error_class == "ValueError"  # type: ignore[attr-defined]


def test_a_connection_the_server_terminated_is_named_by_the_servers_error(
    app, backend, monkeypatch, caplog
):
    """PostgreSQL ending the worker's connection (what a fast shutdown does
    to every backend) reaches the log as the server's own error."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL's administrator shutdown")
    if pgbouncer.wanted():
        pytest.skip("behind a pooler, which server connection a client has changes per transaction")
    monkeypatch.setattr(db, "ALIVE_BYPASS_SECONDS", 3600.0)  # no ping at checkout
    engine = db.get_engine()
    engine.dispose()  # one pooled connection: the one terminated below
    with db.reading() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    caplog.set_level(logging.WARNING, logger="webapp.eventstore.projections")
    projections.run_all()
    [record] = failures(caplog)
    assert record.getMessage() == "projection run failed: database unavailable"
    assert record.error_class == "AdminShutdown"  # type: ignore[attr-defined]
    assert record.sqlstate == "57P01"  # type: ignore[attr-defined]
    projections.run_all()  # the pool replaced the connection
    assert len(failures(caplog)) == 1
