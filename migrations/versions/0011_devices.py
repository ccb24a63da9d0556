"""Your devices (issue 21.4/21.5): what each sign-in shows in the device list
(browser and system from the user agent, the shortened address, last active),
and the browsers each account has signed in from (the new-device alert).

Revision ID: 0011_devices
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_devices"
down_revision = "0010_flow_control"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("user_sessions") as batch:
        batch.add_column(sa.Column("browser", sa.String(64), nullable=True))
        batch.add_column(sa.Column("system", sa.String(64), nullable=True))
        batch.add_column(sa.Column("address", sa.String(64), nullable=True))
        batch.add_column(sa.Column("last_active_at", TS, nullable=True))
    op.create_table(
        "known_devices",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(36), primary_key=True),
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("first_seen_at", TS, nullable=False),
        sa.Column("last_seen_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("known_devices")
    with op.batch_alter_table("user_sessions") as batch:
        batch.drop_column("last_active_at")
        batch.drop_column("address")
        batch.drop_column("system")
        batch.drop_column("browser")
