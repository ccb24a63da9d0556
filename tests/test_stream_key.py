"""Migration 0018: the events table keeps one stream index (the unique
constraint, aggregate id first) instead of two, and aggregate ids of up to
200 characters (`publish`'s MAX_ID) fit both `events.aggregate_id` and the
run's `subject_id`. The events written before the migration keep their rows
and a stream's versions stay unique after it, up and down, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import IntegrityError

import webapp.workflows as wf
from tests.support import workers
from tests.support.workflows import emit, only_run
from webapp.core import db
from webapp.core.migrate import downgrade, upgrade
from webapp.publish import MAX_ID

BEFORE = "0017_lease_holders"
NEW_ORDER = ["aggregate_id", "tenant_id", "aggregate_type", "version"]
OLD_ORDER = ["tenant_id", "aggregate_type", "aggregate_id", "version"]
INSERT = text(
    "INSERT INTO events (position, id, tenant_id, aggregate_type, aggregate_id, version,"
    " type, payload, metadata, recorded_at) VALUES (:position, :id, 'default', 'order',"
    " :aggregate_id, :version, 'order.placed', '{}', '{}', '2026-12-01 10:00:00+00:00')"
)


@pytest.fixture
def scratch_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """An empty database of this test's own (the session's stays at head)."""
    if database_url.startswith("postgresql"):
        name = f"{workers.worker_id() or 'main'}_m18"
        with workers.own_postgresql_database(database_url, name) as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path / 'm18.db'}"


def _shape(url: str) -> tuple[list[list[str]], list[str], list[tuple[str, int]]]:
    engine = create_engine(url)
    try:
        insp = inspect(engine)
        unique = [c["column_names"] for c in insp.get_unique_constraints("events")]
        indexes = sorted(i["name"] for i in insp.get_indexes("events") if i["name"])
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT aggregate_id, version FROM events ORDER BY position"))
            return unique, indexes, [tuple(r) for r in rows]
    finally:
        engine.dispose()


def _insert(url: str, position: int, aggregate_id: str, version: int) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                INSERT,
                {
                    "position": position,
                    "id": f"e-{position}",
                    "aggregate_id": aggregate_id,
                    "version": version,
                },
            )
    finally:
        engine.dispose()


def test_upgrade_keeps_the_events_and_one_stream_index_and_downgrade_restores(scratch_url):
    upgrade(scratch_url, BEFORE)
    _insert(scratch_url, 1, "o-1", 1)
    _insert(scratch_url, 2, "o-1", 2)
    before = _shape(scratch_url)
    assert OLD_ORDER in before[0] and "ix_events_stream_key" in before[1]

    upgrade(scratch_url)
    unique, indexes, rows = _shape(scratch_url)
    assert NEW_ORDER in unique and OLD_ORDER not in unique
    assert ["id"] in unique  # the event id stays unique
    assert "ix_events_stream_key" not in indexes and "ix_events_type_position" in indexes
    assert rows == [("o-1", 1), ("o-1", 2)]
    with pytest.raises(IntegrityError):  # a stream's versions are still unique
        _insert(scratch_url, 3, "o-1", 2)
    _insert(scratch_url, 3, "x" * MAX_ID, 1)  # the widest id publish accepts fits
    assert _shape(scratch_url)[2][-1] == ("x" * MAX_ID, 1)

    engine = create_engine(scratch_url)
    with engine.begin() as conn:  # a 100-character column cannot take it back
        conn.execute(text("DELETE FROM events WHERE position = 3"))
    engine.dispose()
    downgrade(scratch_url, BEFORE)
    assert _shape(scratch_url) == before
    with pytest.raises(IntegrityError):
        _insert(scratch_url, 3, "o-1", 2)


def test_a_run_triggered_on_the_longest_aggregate_id_starts_and_keeps_its_subject(
    use_workflow, work
):
    """The run's subject is its trigger's aggregate id (a subject's erasure
    finds its runs by it): every id publish accepts fits."""
    use_workflow(wf.workflow("long-subject", on="order.placed", steps=[wf.ret(lambda ctx: "done")]))
    subject = "s" * MAX_ID
    emit("order.placed", {}, aggregate_id=subject)
    work()
    run = only_run("long-subject")
    assert (run.status, run.subject_id) == ("completed", subject)


def test_append_event_refuses_an_aggregate_id_its_column_cannot_hold(use_workflow, work, caplog):
    """A computed id one character too long fails the step on both backends
    (SQLite alone would have stored it), and nothing is appended. The run keeps
    the error's class; the log has the message."""
    use_workflow(
        wf.workflow(
            "too-long",
            on="order.placed",
            steps=[wf.append_event("note", "note", lambda ctx: "n" * (MAX_ID + 1), "note.added")],
        )
    )
    emit("order.placed", {}, aggregate_id="o-1")
    work()
    run = only_run("too-long")
    assert run.status == "failed"
    assert run.error == "workflow step failed (ValueError)"
    assert f"step 'note': the aggregate id must be 1 to {MAX_ID} characters" in caplog.text
    with db.reading() as conn:
        assert (
            conn.exec_driver_sql("SELECT COUNT(*) FROM events WHERE type = 'note.added'").scalar()
            == 0
        )
