"""Workflows v2: the stream-key index append_many reads versions by, and the
subject of a run (whose erasure erases its results).

Revision ID: 0004_workflows_v2
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_workflows_v2"
down_revision = "0003_accounts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # append_many reads max(version) per stream for a batch of aggregate ids:
    # an index that starts with aggregate_id answers it without a scan.
    op.create_index(
        "ix_events_stream_key",
        "events",
        ["aggregate_id", "tenant_id", "aggregate_type", "version"],
    )
    op.add_column("workflow_runs", sa.Column("subject_id", sa.String(100), nullable=True))
    op.create_index("ix_workflow_runs_subject", "workflow_runs", ["tenant_id", "subject_id"])
    op.create_index(
        "ix_workflow_run_pending_tenant_wait_type",
        "workflow_run_pending",
        ["tenant_id", "wait_event_type"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_run_pending_tenant_wait_type", "workflow_run_pending")
    op.drop_index("ix_workflow_runs_subject", "workflow_runs")
    op.drop_column("workflow_runs", "subject_id")
    op.drop_index("ix_events_stream_key", "events")
