"""Accounts tables (filled in by the accounts feature).

Revision ID: 0003_accounts
"""

revision = "0003_accounts"
down_revision = "0002_workflows"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
