"""Accounts: one server-side row per sign-in, so signing out ends that session.

Revision ID: 0005_accounts_sessions
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_accounts_sessions"
down_revision = "0003_accounts"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "user_sessions",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_user_sessions_user", "user_sessions", ["tenant_id", "user_id"])
    op.create_index("ix_user_sessions_expires", "user_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_user_sessions_expires", table_name="user_sessions")
    op.drop_index("ix_user_sessions_user", table_name="user_sessions")
    op.drop_table("user_sessions")
