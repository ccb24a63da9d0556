"""Workflow versions side by side: the version a run started with, and the
shape of every definition a run has used (for the deploy check).

Revision ID: 0009_workflow_versions
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_workflow_versions"
down_revision = "0008_privacy"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_runs") as batch:
        batch.add_column(
            sa.Column("definition_version", sa.Integer, nullable=False, server_default="1")
        )
    op.create_table(
        "workflow_definitions",
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("workflow_name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("shape", sa.JSON, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workflow_definitions")
    with op.batch_alter_table("workflow_runs") as batch:
        batch.drop_column("definition_version")
