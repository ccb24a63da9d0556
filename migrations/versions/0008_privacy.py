"""Privacy center: export jobs (one active per user), download tokens, download attempts.

Revision ID: 0008_privacy
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_privacy"
down_revision = "0007_admin"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "export_jobs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("requested_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("completed_at", TS, nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("file_name", sa.String(200), nullable=True),
        sa.Column("bytes_written", sa.BigInteger, nullable=True),
        sa.Column("error", sa.String(200), nullable=True),
    )
    active = sa.text("status IN ('pending', 'running')")
    op.create_index(
        "uq_export_jobs_one_active",
        "export_jobs",
        ["tenant_id", "user_id"],
        unique=True,
        postgresql_where=active,
        sqlite_where=active,
    )
    op.create_index("ix_export_jobs_user", "export_jobs", ["tenant_id", "user_id"])
    op.create_index("ix_export_jobs_status", "export_jobs", ["status"])
    op.create_table(
        "export_download_tokens",
        sa.Column("job_id", sa.String(36), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("issued_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("use_count", sa.Integer, nullable=False),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("last_used_ip", sa.String(45), nullable=True),
        sa.Column("last_used_user_agent", sa.String(500), nullable=True),
    )
    op.create_table(
        "export_download_attempts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(36), nullable=True),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("via", sa.String(8), nullable=False),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("ip", sa.String(45), nullable=True),
        sa.Column("user_agent", sa.String(500), nullable=True),
        sa.Column("attempted_at", TS, nullable=False),
    )
    op.create_index(
        "ix_export_download_attempts_at", "export_download_attempts", ["attempted_at"]
    )
    op.create_index("ix_export_download_attempts_job", "export_download_attempts", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_export_download_attempts_job", table_name="export_download_attempts")
    op.drop_index("ix_export_download_attempts_at", table_name="export_download_attempts")
    op.drop_table("export_download_attempts")
    op.drop_table("export_download_tokens")
    op.drop_index("ix_export_jobs_status", table_name="export_jobs")
    op.drop_index("ix_export_jobs_user", table_name="export_jobs")
    op.drop_index("uq_export_jobs_one_active", table_name="export_jobs")
    op.drop_table("export_jobs")
