"""Tables of the event-sourced core (schema is created by Alembic migrations)."""

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Integer,
    String,
    Table,
    UniqueConstraint,
)

from webapp.core.db import UTCDateTime, metadata

# The widest stream names the columns hold (publish's and append_event's limits).
MAX_AGGREGATE_TYPE = 100
MAX_AGGREGATE_ID = 200

tenants = Table(
    "tenants",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("created_at", UTCDateTime(), nullable=False),
)

events = Table(
    "events",
    metadata,
    # Gap-free, commit-ordered global position (see store.append).
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("id", String(36), nullable=False, unique=True),
    Column("tenant_id", String(64), nullable=False),
    Column("aggregate_type", String(MAX_AGGREGATE_TYPE), nullable=False),
    Column("aggregate_id", String(MAX_AGGREGATE_ID), nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", String(150), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("recorded_at", UTCDateTime(), nullable=False),
    # Aggregate id first: it answers a stream's reads and append_many's batch
    # version read by ids alone (migration 0018; one index, not two).
    UniqueConstraint(
        "aggregate_id", "tenant_id", "aggregate_type", "version", name="uq_events_stream_version"
    ),
)

# One row (id=1): the last global position handed out. Every append updates it,
# which takes a row lock held to commit, so positions follow commit order.
event_counter = Table(
    "event_counter",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("last_position", BigInteger, nullable=False),
)

projection_cursors = Table(
    "projection_cursors",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("position", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("retry_at", UTCDateTime(), nullable=True),
    Column("last_error_class", String(200), nullable=True),
    Column("updated_at", UTCDateTime(), nullable=False),
)

parked_events = Table(
    "parked_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("projection", String(200), nullable=False),
    Column("event_id", String(36), nullable=False),
    Column("position", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("error_class", String(200), nullable=False),
    Column("parked_at", UTCDateTime(), nullable=False),
    UniqueConstraint("projection", "event_id", name="uq_parked_projection_event"),
)
