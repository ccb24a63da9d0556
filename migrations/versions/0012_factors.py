"""Second factors: the authenticator app (TOTP) and its recovery codes, and what
the profile shows of them on the `users` row.

Revision ID: 0012_factors
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_factors"
down_revision = "0011_devices"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # What the profile shows of them, on the account's row (kept by its projection).
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("totp_since", TS, nullable=True))
        batch.add_column(
            sa.Column("recovery_codes_left", sa.Integer, nullable=False, server_default="0")
        )
    op.create_table(
        "user_factors",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("secret", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("confirmed_at", TS, nullable=True),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("last_step", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_user_factors_user", "user_factors", ["tenant_id", "user_id"])
    op.create_table(
        "recovery_codes",
        sa.Column("batch", sa.String(36), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("code_hash", sa.String(255), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("used_at", TS, nullable=True),
    )
    op.create_index("ix_recovery_codes_user", "recovery_codes", ["tenant_id", "user_id"])


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("recovery_codes_left")
        batch.drop_column("totp_since")
    op.drop_index("ix_recovery_codes_user", table_name="recovery_codes")
    op.drop_table("recovery_codes")
    op.drop_index("ix_user_factors_user", table_name="user_factors")
    op.drop_table("user_factors")
