"""Linked identities (sign in with an identity provider): one row per
provider identity linked to an account, and how many an account has on its
`users` row (the profile reads the list only then).

Revision ID: 0019_identities
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_identities"
down_revision = "0018_stream_key"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("identities", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "user_identities",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("linked_at", TS, nullable=False),
        sa.Column("last_used_at", TS, nullable=True),
    )
    op.create_index("ix_user_identities_user", "user_identities", ["tenant_id", "user_id"])
    op.create_index(
        "ux_user_identities_subject",
        "user_identities",
        ["tenant_id", "provider", "subject"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("ux_user_identities_subject", table_name="user_identities")
    op.drop_index("ix_user_identities_user", table_name="user_identities")
    op.drop_table("user_identities")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("identities")
