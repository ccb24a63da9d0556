"""Operations console: who may enter (`users.is_admin`) and the indexes the runs
list pages and counts by (newest first per tenant, per status, per workflow).

Revision ID: 0007_admin
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_admin"
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
    # Counts per status (and the list) within one workflow: index-only too.
    op.create_index(
        "ix_workflow_runs_tenant_workflow_status",
        "workflow_runs",
        ["tenant_id", "workflow_name", "status", "started_at", "run_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_runs_tenant_workflow_status", table_name="workflow_runs")
    op.drop_index("ix_workflow_runs_tenant_status_started", table_name="workflow_runs")
    op.drop_index("ix_workflow_runs_tenant_started", table_name="workflow_runs")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("is_admin")
