"""A mail a worker was sending when the backup was taken is pending in the
backup with that worker's claim on it. After a restore the worker belongs to
the database that was replaced: the restore drops its claim and queues the
mail, so the first worker to start sends it once, without waiting for the
claim to expire or for the minute sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from webapp.core import db
from webapp.mail.outbox import delivery, store
from webapp.mail.outbox.tables import PENDING, SENT, mail_outbox
from webapp.tenants import DEFAULT_TENANT


def _row(outbox_id: int) -> Any:
    with db.reading() as conn:
        return conn.execute(select(mail_outbox).where(mail_outbox.c.id == outbox_id)).one()


def _sent_to(folder: Path) -> list[str]:
    return [
        line[4:].strip()
        for eml in sorted(folder.glob("*.eml"))
        for line in eml.read_text().splitlines()
        if line.startswith("To: ")
    ]


def test_a_mail_being_sent_at_backup_time_is_sent_once_after_the_restore(
    app: Any, runner: Any, work: Any, tmp_path: Path, backend: str
) -> None:
    if backend != "sqlite":
        pytest.skip("restores into the test's own database: SQLite (PostgreSQL: the load test)")
    with db.transaction() as conn:
        claimed = store.record(
            conn,
            store.Mail(to="ada@example.com", subject="Hello", body="Hello Ada"),
            tenant_id=DEFAULT_TENANT,
            user_id=None,
            kind="test",
        )
        waiting = store.record(
            conn,
            store.Mail(to="bob@example.com", subject="Hello", body="Hello Bob"),
            tenant_id=DEFAULT_TENANT,
            user_id=None,
            kind="test",
        )
    assert claimed is not None and waiting is not None
    assert delivery.claim(claimed, "a worker of the world that is replaced") is not None
    assert delivery.deliver(claimed) == "skipped"  # held: nobody else sends it

    made = runner.invoke(args=["backup", "create", str(tmp_path / "b")])
    assert made.exit_code == 0, made.output
    restored = runner.invoke(args=["backup", "restore", "--yes", str(tmp_path / "b")])
    assert restored.exit_code == 0, restored.output
    assert "1 mails were being sent when the backup was taken" in restored.output
    assert "mail outbox: 2 to send (0 being sent now" in restored.output
    row = _row(claimed)
    assert row.status == PENDING and row.lease_until is None and row.lease_owner is None

    work()  # the deliveries the restore queued: no sweep, no expired claim needed
    assert _row(claimed).status == SENT and _row(waiting).status == SENT
    mail_folder = app.config["APP_CONFIG"].instance_path / "mail"
    assert sorted(_sent_to(mail_folder)) == ["ada@example.com", "bob@example.com"]
