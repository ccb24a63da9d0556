"""Event-sourced core: tenants, events, position counter, projection cursors, parked events.

Revision ID: 0001_core
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0001_core"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    tenants = op.create_table(
        "tenants",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("id", sa.String(36), nullable=False, unique=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("aggregate_type", sa.String(100), nullable=False),
        sa.Column("aggregate_id", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("type", sa.String(150), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("recorded_at", TS, nullable=False),
        sa.UniqueConstraint(
            "tenant_id", "aggregate_type", "aggregate_id", "version", name="uq_events_stream_version"
        ),
    )
    op.create_index("ix_events_type_position", "events", ["type", "position"])
    counter = op.create_table(
        "event_counter",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("last_position", sa.BigInteger, nullable=False),
    )
    op.bulk_insert(counter, [{"id": 1, "last_position": 0}])
    op.create_table(
        "projection_cursors",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("retry_at", TS, nullable=True),
        sa.Column("last_error_class", sa.String(200), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "parked_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("projection", sa.String(200), nullable=False),
        sa.Column("event_id", sa.String(36), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("error_class", sa.String(200), nullable=False),
        sa.Column("parked_at", TS, nullable=False),
        sa.UniqueConstraint("projection", "event_id", name="uq_parked_projection_event"),
    )
    op.bulk_insert(
        tenants,
        [{"id": "default", "name": "Default", "created_at": datetime.now(UTC).replace(tzinfo=None)}],
    )


def downgrade() -> None:
    for name in ("parked_events", "projection_cursors", "event_counter", "events", "tenants"):
        op.drop_table(name)
