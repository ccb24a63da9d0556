"""A wait's look-back that is still owed (`workflow_run_pending.lookback_due`):
set when a wait for an event (or a cancel-on) registers, cleared by the
look-back that is complete for it. The minute sweep does the look-back of a
row whose process died (or whose backup was taken) before that, so an event
that came before the wait is never missed.

Revision ID: 0023_pending_lookback
"""

import sqlalchemy as sa
from alembic import op

revision = "0023_pending_lookback"
down_revision = "0022_run_messages"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_run_pending") as batch:
        batch.add_column(sa.Column("lookback_due", sa.Boolean, nullable=True))
    due = sa.text("lookback_due")
    op.create_index(
        "ix_workflow_run_pending_lookback_due",
        "workflow_run_pending",
        ["tenant_id"],
        postgresql_where=due,
        sqlite_where=due,
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_run_pending_lookback_due", table_name="workflow_run_pending")
    with op.batch_alter_table("workflow_run_pending") as batch:
        batch.drop_column("lookback_due")
