"""The privacy center's scheduled jobs.

- `export-stale` (every 5 minutes): a job pending or running for longer than
  30 minutes is failed ("stale"), so the user can ask again.
- `export-cleanup` (daily, 03:30 UTC): files of expired exports and of failed
  jobs are deleted (job and token rows stay, as the record), and download
  attempts older than 90 days are deleted.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import or_, select, update

from webapp.core import clock, db
from webapp.jobs import job
from webapp.privacy import downloads, exports
from webapp.privacy.export_workflow import STALE_AFTER, fail, remove
from webapp.privacy.tables import ACTIVE, DONE, FAILED, PENDING, RUNNING, export_jobs

log = logging.getLogger(__name__)


def fail_stale(now: datetime) -> int:
    cutoff = now - STALE_AFTER
    with db.reading() as conn:
        ids = list(
            conn.execute(
                select(export_jobs.c.id).where(
                    export_jobs.c.status.in_(ACTIVE),
                    or_(
                        (export_jobs.c.status == RUNNING) & (export_jobs.c.started_at < cutoff),
                        (export_jobs.c.status == PENDING) & (export_jobs.c.requested_at < cutoff),
                    ),
                )
            ).scalars()
        )
    failed = 0
    for job_id in ids:
        with db.transaction() as conn:
            conn.execute(
                select(export_jobs.c.id).where(export_jobs.c.id == job_id).with_for_update()
            )
            current = exports.get(conn, job_id)
            if current is None or current.status not in ACTIVE:
                continue  # finished meanwhile
            fail(conn, current, "stale")
            failed += 1
    return failed


def clean_files(now: datetime) -> int:
    with db.reading() as conn:
        rows = list(
            conn.execute(
                select(export_jobs.c.id, export_jobs.c.file_name).where(
                    export_jobs.c.file_name.is_not(None),
                    or_(
                        (export_jobs.c.status == DONE) & (export_jobs.c.expires_at <= now),
                        export_jobs.c.status == FAILED,
                    ),
                )
            )
        )
    removed = 0
    for row in rows:
        if not remove(row.file_name):
            continue  # the next run tries again
        removed += 1
        with db.transaction() as conn:
            conn.execute(
                update(export_jobs).where(export_jobs.c.id == row.id).values(file_name=None)
            )
    return removed


@job("export-stale", cron="*/5 * * * *", per_tenant=False, concurrency="skip")
def export_stale(_tenant_id: str | None, _tick: datetime) -> None:
    failed = fail_stale(clock.now())
    if failed:
        log.info("stale exports failed", extra={"count": failed})


@job("export-cleanup", cron="30 3 * * *", per_tenant=False, concurrency="skip")
def export_cleanup(_tenant_id: str | None, _tick: datetime) -> None:
    now = clock.now()
    removed = clean_files(now)
    with db.transaction() as conn:
        purged = downloads.purge_attempts(conn, now)
    log.info("export files cleaned", extra={"files": removed, "attempts": purged})
