"""Export jobs: requesting one (at most one active per user), reading the
newest, and the lookups the download and the operator commands need."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from webapp.accounts.account import Account, Refusal
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import append_to, fresh
from webapp.accounts.users import User
from webapp.core import db
from webapp.privacy.tables import ACTIVE, export_jobs


@dataclass(frozen=True)
class Job:
    id: str
    tenant_id: str
    user_id: str
    status: str
    requested_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    expires_at: datetime | None
    file_name: str | None
    bytes_written: int | None
    error: str | None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


def _job(row: Any) -> Job:
    return Job(**{c.name: getattr(row, c.name) for c in export_jobs.columns})


def latest(conn: Connection, user: User) -> Job | None:
    """The user's newest job (the one the page shows)."""
    row = conn.execute(
        select(export_jobs)
        .where(export_jobs.c.tenant_id == user.tenant_id, export_jobs.c.user_id == user.id)
        .order_by(export_jobs.c.requested_at.desc(), export_jobs.c.id.desc())
        .limit(1)
    ).first()
    return _job(row) if row else None


def active(conn: Connection, user: User) -> Job | None:
    """The user's pending or running job, if any (at most one: the index)."""
    row = conn.execute(
        select(export_jobs).where(
            export_jobs.c.tenant_id == user.tenant_id,
            export_jobs.c.user_id == user.id,
            export_jobs.c.status.in_(ACTIVE),
        )
    ).first()
    return _job(row) if row else None


def get(conn: Connection, job_id: str) -> Job | None:
    try:
        uuid.UUID(job_id)
    except (ValueError, TypeError, AttributeError):
        return None  # a hostile id never reaches the database
    row = conn.execute(select(export_jobs).where(export_jobs.c.id == job_id)).first()
    return _job(row) if row else None


def owned(conn: Connection, job_id: str, user: User) -> Job | None:
    """The job when it is `user`'s; another user's job looks exactly like none."""
    job = get(conn, job_id)
    if job is None or job.user_id != user.id or job.tenant_id != user.tenant_id:
        return None
    return job


def listing(conn: Connection, limit: int = 50) -> list[Job]:
    rows = conn.execute(
        select(export_jobs).order_by(export_jobs.c.requested_at.desc()).limit(limit)
    )
    return [_job(r) for r in rows]


def request_export(user: User) -> Result:
    """Start an export unless one is pending or running (then that one stands):
    a double click, a second tab or a second process all end with one job."""

    def attempt() -> Result:
        try:
            with db.transaction() as conn:
                row = fresh(conn, user)
                job_id = str(uuid.uuid4())
                decision = Account(row).request_export(job_id)
                if isinstance(decision, Refusal):
                    return Result.refused(decision)
                current = active(conn, row)
                if current is not None:
                    return Result(True, "privacy.export.pending", {"job_id": current.id})
                append_to(conn, row, decision)
        except IntegrityError:  # the other process's job won the partial unique index
            with db.reading() as conn:
                current = active(conn, user)
            return Result(True, "privacy.export.pending", {"job_id": current.id if current else ""})
        return Result(True, "privacy.export.pending", {"job_id": job_id})

    return retry_on_conflict(attempt)
