"""Accounts: user read model, per-user encryption keys, spent one-time tokens.

Revision ID: 0003_accounts
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_accounts"
down_revision = "0002_workflows"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("email_verified", sa.Boolean, nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("session_token", sa.String(64), nullable=False),
        sa.Column("language", sa.String(8), nullable=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("deletion_due_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.UniqueConstraint("tenant_id", "email", name="uq_users_tenant_email"),
    )
    op.create_index("ix_users_status_due", "users", ["status", "deletion_due_at"])
    op.create_table(
        "user_keys",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(36), primary_key=True),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "used_tokens",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("used_at", TS, nullable=False),
    )
    op.create_index("ix_used_tokens_user", "used_tokens", ["tenant_id", "user_id"])


def downgrade() -> None:
    op.drop_index("ix_used_tokens_user", table_name="used_tokens")
    op.drop_table("used_tokens")
    op.drop_table("user_keys")
    op.drop_index("ix_users_status_due", table_name="users")
    op.drop_table("users")
