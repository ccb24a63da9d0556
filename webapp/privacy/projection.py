"""Inline projections of the export events: the `export_jobs` rows, updated in
the append's transaction (the `users` row is the accounts' projection's)."""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import Connection, delete, insert, select, update

from webapp.accounts import events as ev
from webapp.core import db
from webapp.eventstore import Event, register_inline
from webapp.privacy.tables import (
    DONE,
    FAILED,
    PENDING,
    export_download_attempts,
    export_jobs,
)


def _job(conn: Connection, e: Event, **values: Any) -> None:
    conn.execute(
        update(export_jobs)
        .where(export_jobs.c.id == e.payload["job_id"], export_jobs.c.tenant_id == e.tenant_id)
        .values(**values)
    )


def on_export_requested(conn: Connection, e: Event) -> None:
    # The partial unique index refuses a second active job of the same user.
    conn.execute(
        insert(export_jobs).values(
            id=e.payload["job_id"],
            tenant_id=e.tenant_id,
            user_id=e.aggregate_id,
            status=PENDING,
            requested_at=e.recorded_at,
        )
    )


def on_export_completed(conn: Connection, e: Event) -> None:
    _job(
        conn,
        e,
        status=DONE,
        completed_at=e.recorded_at,
        expires_at=datetime.fromisoformat(e.payload["expires_at"]),
        bytes_written=e.payload.get("bytes"),
        error=None,
    )


def on_export_failed(conn: Connection, e: Event) -> None:
    _job(
        conn,
        e,
        status=FAILED,
        completed_at=e.recorded_at,
        error=str(e.payload.get("reason", "failed"))[:200],
    )


def on_erased(conn: Connection, e: Event) -> None:
    """The account is erased: its export files go (after commit), and the download
    attempts (addresses, browsers) with them; job rows stay without a file."""
    names = list(
        conn.execute(
            select(export_jobs.c.file_name).where(
                export_jobs.c.tenant_id == e.tenant_id,
                export_jobs.c.user_id == e.aggregate_id,
                export_jobs.c.file_name.is_not(None),
            )
        ).scalars()
    )
    conn.execute(
        update(export_jobs)
        .where(export_jobs.c.tenant_id == e.tenant_id, export_jobs.c.user_id == e.aggregate_id)
        .values(file_name=None)
    )
    conn.execute(
        delete(export_download_attempts).where(
            export_download_attempts.c.tenant_id == e.tenant_id,
            export_download_attempts.c.user_id == e.aggregate_id,
        )
    )
    folder = Path(current_app.config["APP_CONFIG"].exports_path)

    def remove() -> None:
        for name in names:  # best effort: a file left behind is the cleanup's
            with contextlib.suppress(OSError):
                (folder / name).unlink(missing_ok=True)

    db.after_commit(conn, remove)


def register() -> None:
    for event_type, handler in {
        ev.EXPORT_REQUESTED: on_export_requested,
        ev.EXPORT_COMPLETED: on_export_completed,
        ev.EXPORT_FAILED: on_export_failed,
        ev.ERASED: on_erased,
    }.items():
        register_inline(event_type, handler)
