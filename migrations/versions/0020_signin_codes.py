"""Sign-in by emailed code: the codes handed out and not yet used, one per
browser session that asked (`binding`: the sha256 of a random value kept in
that session), with a keyed hash of the code, its wrong tries and its expiry.

Revision ID: 0020_signin_codes
"""

import sqlalchemy as sa
from alembic import op

revision = "0020_signin_codes"
down_revision = "0019_identities"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "signin_codes",
        sa.Column("binding", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_signin_codes_expiry", "signin_codes", ["expires_at"])
    op.create_index("ix_signin_codes_user", "signin_codes", ["tenant_id", "user_id"])


def downgrade() -> None:
    op.drop_index("ix_signin_codes_user", table_name="signin_codes")
    op.drop_index("ix_signin_codes_expiry", table_name="signin_codes")
    op.drop_table("signin_codes")
