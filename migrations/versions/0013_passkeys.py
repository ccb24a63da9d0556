"""Passkeys (WebAuthn): their columns on `user_factors`, how many an account
has on its `users` row, and the challenges handed out and not yet answered.

Revision ID: 0013_passkeys
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_passkeys"
down_revision = "0012_factors"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("passkeys", sa.Integer, nullable=False, server_default="0"))
    with op.batch_alter_table("user_factors") as batch:
        batch.add_column(sa.Column("credential_id", sa.String(1400), nullable=True))
        batch.add_column(sa.Column("public_key", sa.Text, nullable=True))
        batch.add_column(sa.Column("sign_count", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("transports", sa.String(200), nullable=True))
        batch.add_column(sa.Column("user_handle", sa.String(100), nullable=True))
    op.create_index("ux_user_factors_credential", "user_factors", ["credential_id"], unique=True)
    op.create_table(
        "webauthn_challenges",
        sa.Column("challenge", sa.String(100), primary_key=True),
        sa.Column("binding", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("user_handle", sa.String(100), nullable=True),
        sa.Column("expires_at", TS, nullable=False),
    )
    op.create_index("ix_webauthn_challenges_expiry", "webauthn_challenges", ["expires_at"])


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("passkeys")
    op.drop_index("ix_webauthn_challenges_expiry", table_name="webauthn_challenges")
    op.drop_table("webauthn_challenges")
    op.drop_index("ux_user_factors_credential", table_name="user_factors")
    with op.batch_alter_table("user_factors") as batch:
        for name in ("user_handle", "transports", "sign_count", "public_key", "credential_id"):
            batch.drop_column(name)
