"""The privacy center's read models: export jobs, their download tokens, and
every download attempt. The schema is created by
migrations/versions/0008_privacy.py; keep both in step."""

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table

from webapp.core.db import UTCDateTime, metadata

PENDING = "pending"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
ACTIVE = (PENDING, RUNNING)

# One row per requested export (kept as history after the file is gone).
export_jobs = Table(
    "export_jobs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(36), nullable=False),
    Column("status", String(16), nullable=False),
    Column("requested_at", UTCDateTime(), nullable=False),
    Column("started_at", UTCDateTime(), nullable=True),
    Column("completed_at", UTCDateTime(), nullable=True),
    Column("expires_at", UTCDateTime(), nullable=True),
    # The ZIP's file name under EXPORT_DIR; cleared when the file is deleted.
    Column("file_name", String(200), nullable=True),
    Column("bytes_written", BigInteger, nullable=True),
    Column("error", String(200), nullable=True),
)
# At most one pending or running job per user: double clicks, two tabs and two
# processes all meet this index (partial on both backends).
Index(
    "uq_export_jobs_one_active",
    export_jobs.c.tenant_id,
    export_jobs.c.user_id,
    unique=True,
    postgresql_where=export_jobs.c.status.in_(ACTIVE),
    sqlite_where=export_jobs.c.status.in_(ACTIVE),
)
Index("ix_export_jobs_user", export_jobs.c.tenant_id, export_jobs.c.user_id)
Index("ix_export_jobs_status", export_jobs.c.status)

# The mail's download link: only the SHA-256 of its random token is stored.
export_download_tokens = Table(
    "export_download_tokens",
    metadata,
    Column("job_id", String(36), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("issued_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("use_count", Integer, nullable=False),
    Column("last_used_at", UTCDateTime(), nullable=True),
    Column("last_used_ip", String(45), nullable=True),
    Column("last_used_user_agent", String(500), nullable=True),
)

# Every download and every refused attempt (deleted after 90 days).
export_download_attempts = Table(
    "export_download_attempts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("job_id", String(36), nullable=True),
    Column("user_id", String(36), nullable=True),
    Column("via", String(8), nullable=False),  # job | token
    Column("result", String(16), nullable=False),  # ok | notFound | expired | unavailable
    Column("ip", String(45), nullable=True),
    Column("user_agent", String(500), nullable=True),
    Column("attempted_at", UTCDateTime(), nullable=False),
)
Index("ix_export_download_attempts_at", export_download_attempts.c.attempted_at)
Index(
    "ix_export_download_attempts_job",
    export_download_attempts.c.job_id,
)
