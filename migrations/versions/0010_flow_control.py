"""Flow control: a run's concurrency key and priority, the per-key rows
admissions lock, and pausing (runs, their pending rows, whole workflows).

Revision ID: 0010_flow_control
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_flow_control"
down_revision = "0009_workflow_versions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_runs") as batch:
        batch.add_column(sa.Column("concurrency_key", sa.String(200), nullable=True))
        batch.add_column(sa.Column("priority", sa.Integer, nullable=True))
        batch.add_column(sa.Column("paused_by", sa.String(10), nullable=True))
    with op.batch_alter_table("workflow_run_pending") as batch:
        batch.add_column(
            sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.create_table(
        "workflow_pauses",
        sa.Column("workflow_name", sa.String(200), primary_key=True),
        sa.Column("paused_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(200), nullable=True),
    )
    op.create_index(
        "ix_workflow_runs_slots",
        "workflow_runs",
        ["tenant_id", "workflow_name", "concurrency_key", "status"],
    )
    op.create_table(
        "workflow_slot_keys",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("workflow_name", sa.String(200), primary_key=True),
        sa.Column("concurrency_key", sa.String(200), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("workflow_pauses")
    with op.batch_alter_table("workflow_run_pending") as batch:
        batch.drop_column("paused")
    op.drop_table("workflow_slot_keys")
    op.drop_index("ix_workflow_runs_slots", "workflow_runs")
    with op.batch_alter_table("workflow_runs") as batch:
        batch.drop_column("paused_by")
        batch.drop_column("priority")
        batch.drop_column("concurrency_key")
