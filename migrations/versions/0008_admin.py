"""Operations console: who may enter (`users.is_admin`) and the index the runs
list pages by (newest first per tenant, optionally per status).

Revision ID: 0008_admin
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_admin"
down_revision = "0006_mail_outbox"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("is_admin", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.create_index(
        "ix_workflow_runs_tenant_started", "workflow_runs", ["tenant_id", "started_at", "run_id"]
    )
    op.create_index(
        "ix_workflow_runs_tenant_status_started",
        "workflow_runs",
        ["tenant_id", "status", "started_at", "run_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_runs_tenant_status_started", table_name="workflow_runs")
    op.drop_index("ix_workflow_runs_tenant_started", table_name="workflow_runs")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("is_admin")
