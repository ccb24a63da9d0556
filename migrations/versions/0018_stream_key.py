"""One stream index instead of two, and aggregate ids up to 200 characters.

`uq_events_stream_version` (tenant_id, aggregate_type, aggregate_id, version)
and `ix_events_stream_key` (aggregate_id, tenant_id, aggregate_type, version,
migration 0004) held the same four columns in two orders. The unique
constraint now has the order of the second, which answers every read of
both (each names the aggregate id; the batch version read names only ids),
so every append writes one index fewer.

`publish()` accepts aggregate ids of up to 200 characters (`MAX_ID`), but the
column held 100: on PostgreSQL an id of 101-200 characters failed with a
DataError (SQLite does not enforce lengths). `events.aggregate_id` and the run's
`subject_id` (the trigger's aggregate id) now hold 200.

On PostgreSQL the new unique index is built before the old constraint is
dropped, and widening a varchar rewrites nothing. SQLite cannot drop a
constraint declared with its table: the table is copied once.

Revision ID: 0018_stream_key
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_stream_key"
down_revision = "0017_lease_holders"
branch_labels = None
depends_on = None

OLD_ORDER = ["tenant_id", "aggregate_type", "aggregate_id", "version"]
NEW_ORDER = ["aggregate_id", "tenant_id", "aggregate_type", "version"]


def _events(id_length: int, unique: list[str]) -> sa.Table:
    """The events table before the change (SQLite's copy starts from it):
    0001 and 0004's shape, or this revision's."""
    key_index = [sa.Index("ix_events_stream_key", *NEW_ORDER)] if unique == OLD_ORDER else []
    return sa.Table(
        "events",
        sa.MetaData(),
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("id", sa.String(36), nullable=False, unique=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("aggregate_type", sa.String(100), nullable=False),
        sa.Column("aggregate_id", sa.String(id_length), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("type", sa.String(150), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint(*unique, name="uq_events_stream_version"),
        sa.Index("ix_events_type_position", "type", "position"),
        *key_index,
    )


def _reshape(upgrading: bool) -> None:
    old_length, new_length = (100, 200) if upgrading else (200, 100)
    drop, keep = (OLD_ORDER, NEW_ORDER) if upgrading else (NEW_ORDER, OLD_ORDER)
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table(
            "events", copy_from=_events(old_length, drop), recreate="always"
        ) as batch:
            batch.alter_column("aggregate_id", type_=sa.String(new_length))
            batch.drop_constraint("uq_events_stream_version", type_="unique")
            if upgrading:
                batch.drop_index("ix_events_stream_key")
            else:
                batch.create_index("ix_events_stream_key", NEW_ORDER)
            batch.create_unique_constraint("uq_events_stream_version", keep)
    else:
        op.alter_column(
            "events",
            "aggregate_id",
            type_=sa.String(new_length),
            existing_type=sa.String(old_length),
            existing_nullable=False,
        )
        op.create_index("uq_events_stream_version_new", "events", keep, unique=True)
        op.drop_constraint("uq_events_stream_version", "events", type_="unique")
        op.execute(
            "ALTER TABLE events ADD CONSTRAINT uq_events_stream_version"
            " UNIQUE USING INDEX uq_events_stream_version_new"
        )
        if upgrading:
            op.drop_index("ix_events_stream_key", "events")
        else:
            op.create_index("ix_events_stream_key", "events", NEW_ORDER)
    with op.batch_alter_table("workflow_runs") as batch:
        batch.alter_column(
            "subject_id", type_=sa.String(new_length), existing_type=sa.String(old_length)
        )


def upgrade() -> None:
    _reshape(upgrading=True)


def downgrade() -> None:
    _reshape(upgrading=False)
