"""Lease holders: the process holding a run's lease (`lease_holder`, the name
of its liveness key in Redis). A lease that missed its renewals and whose
holder's key is gone is taken over before it expires
(webapp/workflows/dispatch/holders.py).

Revision ID: 0017_lease_holders
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_lease_holders"
down_revision = "0016_event_positions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_runs") as batch:
        batch.add_column(sa.Column("lease_holder", sa.String(40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workflow_runs") as batch:
        batch.drop_column("lease_holder")
