"""Workflow runner: the pending set of suspended steps and the runs table.

Revision ID: 0002_workflows
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_workflows"
down_revision = "0001_core"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "workflow_run_pending",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("step_index", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("workflow_name", sa.String(200), nullable=False),
        sa.Column("suspension_event_type", sa.String(150), nullable=False),
        sa.Column("wake_at", TS, nullable=False),
        sa.Column("retry_attempt", sa.Integer, nullable=True),
        sa.Column("definition_fingerprint", sa.String(64), nullable=True),
        sa.Column("wait_event_type", sa.String(150), nullable=True),
        sa.Column("match_expr", sa.JSON, nullable=True),
        sa.Column("trigger_event_type", sa.String(150), nullable=True),
        sa.Column("trigger_event_ref", sa.JSON, nullable=True),
    )
    op.create_index(
        "ix_workflow_run_pending_tenant_wake", "workflow_run_pending", ["tenant_id", "wake_at"]
    )
    op.create_index(
        "ix_workflow_run_pending_wait_type", "workflow_run_pending", ["wait_event_type"]
    )
    op.create_table(
        "workflow_runs",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("workflow_name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("idempotency_key", sa.String(500), nullable=True),
        sa.Column("trigger_event_type", sa.String(150), nullable=True),
        sa.Column("trigger_event_ref", sa.JSON, nullable=True),
        sa.Column("started_position", sa.Integer, nullable=False),
        sa.Column("results", sa.JSON, nullable=False),
        sa.Column("error", sa.String(300), nullable=True),
        sa.Column("reason", sa.String(100), nullable=True),
        sa.Column("lease_token", sa.String(36), nullable=True),
        sa.Column("lease_until", TS, nullable=True),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index(
        "ix_workflow_runs_status_lease", "workflow_runs", ["tenant_id", "status", "lease_until"]
    )
    op.create_index("ix_workflow_runs_name", "workflow_runs", ["workflow_name"])


def downgrade() -> None:
    op.drop_table("workflow_runs")
    op.drop_table("workflow_run_pending")
