"""The HTTP API: API tokens (stored hashed, bound to a tenant, with scopes)
and the idempotency keys of its writes (webapp/api/tables.py).

Revision ID: 0021_api_tokens
"""

import sqlalchemy as sa
from alembic import op

TS = sa.DateTime(timezone=True)

revision = "0021_api_tokens"
down_revision = "0020_signin_codes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("scopes", sa.JSON, nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("hint", sa.String(12), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
        sa.Column("revoked_by", sa.String(200), nullable=True),
    )
    op.create_table(
        "api_idempotency_keys",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("response", sa.JSON, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index(
        "ix_api_idempotency_keys_created", "api_idempotency_keys", ["created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_api_idempotency_keys_created", "api_idempotency_keys")
    op.drop_table("api_idempotency_keys")
    op.drop_table("api_tokens")
