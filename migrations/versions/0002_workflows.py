"""Workflow runner tables (filled in by the workflows feature).

Revision ID: 0002_workflows
"""

revision = "0002_workflows"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
