"""Cron policies: the last tick each cron workflow fired, per tenant (where a
catch-up after downtime starts). A run's new status `skipped` needs no schema.

Revision ID: 0014_cron_policies
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_cron_policies"
down_revision = "0013_passkeys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_cron_ticks",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("workflow_name", sa.String(200), primary_key=True),
        sa.Column("last_tick", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workflow_cron_ticks")
