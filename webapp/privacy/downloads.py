"""Download tokens (the mail's link) and the record of every download attempt.

A token is 32 random bytes; only its SHA-256 is stored. It works as often as
needed until it expires with the job's file. Every download, and every refused
attempt, is recorded with time, client address and user agent; the records
are deleted after 90 days.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import Connection, delete, insert, select, update

from webapp.core import clock
from webapp.privacy import exports
from webapp.privacy.exports import Job
from webapp.privacy.tables import DONE, export_download_attempts, export_download_tokens

ATTEMPTS_KEPT = timedelta(days=90)
OK, NOT_FOUND, EXPIRED, UNAVAILABLE = "ok", "notFound", "expired", "unavailable"


@dataclass(frozen=True)
class Client:
    ip: str
    user_agent: str


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(conn: Connection, job_id: str, expires_at: datetime) -> str:
    """A new token for the job (a rebuilt job gets a new one); the plain token."""
    token = secrets.token_urlsafe(32)
    conn.execute(delete(export_download_tokens).where(export_download_tokens.c.job_id == job_id))
    conn.execute(
        insert(export_download_tokens).values(
            job_id=job_id,
            token_hash=digest(token),
            issued_at=clock.now(),
            expires_at=expires_at,
            use_count=0,
        )
    )
    return token


def check(job: Job | None, folder: Path) -> str:
    """OK when the job's file can be downloaded now, else why not."""
    if job is None:
        return NOT_FOUND
    if job.status != DONE:
        return UNAVAILABLE
    if job.file_name is None or job.expires_at is None or job.expires_at <= clock.now():
        return EXPIRED
    if not (folder / job.file_name).is_file():
        return EXPIRED
    return OK


def job_for_token(conn: Connection, token: str) -> tuple[Job | None, str | None]:
    """The job a token names (None when unknown or past its expiry) and its hash."""
    if not token or len(token) > 100:
        return None, None
    hashed = digest(token)
    row = conn.execute(
        select(export_download_tokens).where(export_download_tokens.c.token_hash == hashed)
    ).first()
    if row is None or row.expires_at <= clock.now():
        return None, hashed if row is not None else None
    return exports.get(conn, row.job_id), hashed


def record(
    conn: Connection,
    job: Job | None,
    via: str,
    result: str,
    client: Client,
    tenant_id: str,
    user_id: str | None = None,
) -> None:
    now = clock.now()
    conn.execute(
        insert(export_download_attempts).values(
            tenant_id=tenant_id,
            job_id=job.id if job else None,
            user_id=job.user_id if job else user_id,
            via=via,
            result=result,
            ip=client.ip[:45],
            user_agent=client.user_agent[:500],
            attempted_at=now,
        )
    )
    if result == OK and via == "token" and job is not None:
        conn.execute(
            update(export_download_tokens)
            .where(export_download_tokens.c.job_id == job.id)
            .values(
                use_count=export_download_tokens.c.use_count + 1,
                last_used_at=now,
                last_used_ip=client.ip[:45],
                last_used_user_agent=client.user_agent[:500],
            )
        )


def attempts(conn: Connection, job_id: str) -> list[dict[str, object]]:
    rows = conn.execute(
        select(export_download_attempts)
        .where(export_download_attempts.c.job_id == job_id)
        .order_by(export_download_attempts.c.id)
    )
    return [dict(r._mapping) for r in rows]


def purge_attempts(conn: Connection, now: datetime) -> int:
    result = conn.execute(
        delete(export_download_attempts).where(
            export_download_attempts.c.attempted_at < now - ATTEMPTS_KEPT
        )
    )
    return int(result.rowcount or 0)
