"""Durable mail: the outbox written in the transaction of the change that
causes a mail, delivered by the worker with backoff.

Revision ID: 0006_mail_outbox
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_mail_outbox"
down_revision = "0005_accounts_sessions"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "mail_outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("recipient", sa.String(320), nullable=True),
        sa.Column("subject", sa.String(300), nullable=True),
        sa.Column("body", sa.Text, nullable=True),
        sa.Column("dedupe_key", sa.String(200), nullable=True, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", TS, nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", TS, nullable=True),
        sa.Column("last_error", sa.String(200), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("sent_at", TS, nullable=True),
    )
    op.create_index("ix_mail_outbox_due", "mail_outbox", ["status", "next_attempt_at"])
    op.create_index("ix_mail_outbox_user", "mail_outbox", ["tenant_id", "user_id", "kind"])


def downgrade() -> None:
    op.drop_index("ix_mail_outbox_user", table_name="mail_outbox")
    op.drop_index("ix_mail_outbox_due", table_name="mail_outbox")
    op.drop_table("mail_outbox")
