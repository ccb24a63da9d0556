"""Signals and updates sent to one run (`workflow_run_messages`,
webapp/workflows/store/messages.py) and a run's progress entries
(`workflow_run_progress`, webapp/workflows/store/progress.py).

Revision ID: 0022_run_messages
"""

import sqlalchemy as sa
from alembic import op

revision = "0022_run_messages"
down_revision = "0021_api_tokens"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "workflow_run_messages",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("message_id", sa.String(36), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("payload", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("answer", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("step_index", sa.Integer, nullable=True),
        sa.Column("sent_at", TS, nullable=False),
        sa.Column("settled_at", TS, nullable=True),
    )
    op.create_index(
        "ix_workflow_run_messages_open",
        "workflow_run_messages",
        ["tenant_id", "run_id", "kind", "name", "status", "seq"],
    )
    op.create_index(
        "ux_workflow_run_messages_key",
        "workflow_run_messages",
        ["tenant_id", "run_id", "kind", "idempotency_key"],
        unique=True,
    )

    op.create_table(
        "workflow_run_progress",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("data", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("emitted_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workflow_run_progress")
    op.drop_table("workflow_run_messages")
