"""Run controls: where a cancel-on row's events start (`after_position`), the
key of a throttled, rate-limited or debounced run (`rate_key`) and a child
run's parent (`parent_run_id`).

Revision ID: 0015_run_controls
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_run_controls"
down_revision = "0014_cron_policies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_run_pending") as batch:
        batch.add_column(sa.Column("after_position", sa.BigInteger, nullable=True))
    with op.batch_alter_table("workflow_runs") as batch:
        batch.add_column(sa.Column("rate_key", sa.String(200), nullable=True))
        batch.add_column(sa.Column("parent_run_id", sa.String(36), nullable=True))
    op.create_index(
        "ix_workflow_runs_rate",
        "workflow_runs",
        ["tenant_id", "workflow_name", "rate_key", "started_at"],
    )
    op.create_index("ix_workflow_runs_parent", "workflow_runs", ["tenant_id", "parent_run_id"])


def downgrade() -> None:
    op.drop_index("ix_workflow_runs_parent", "workflow_runs")
    op.drop_index("ix_workflow_runs_rate", "workflow_runs")
    with op.batch_alter_table("workflow_runs") as batch:
        batch.drop_column("parent_run_id")
        batch.drop_column("rate_key")
    with op.batch_alter_table("workflow_run_pending") as batch:
        batch.drop_column("after_position")
