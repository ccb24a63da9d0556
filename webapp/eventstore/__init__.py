"""The event-sourced core. Imports nothing from the features built on it."""

from webapp.eventstore.positions import safe_position
from webapp.eventstore.reads import (
    event_at,
    get_event,
    get_events,
    head_position,
    read_all,
    read_stream,
)
from webapp.eventstore.records import UnknownTenant
from webapp.eventstore.store import (
    ANY,
    Event,
    Metadata,
    NewEvent,
    StreamId,
    VersionConflict,
    append,
    append_many,
    has_inline,
    hold_append_lock,
    register_inline,
    stream_version,
)
from webapp.eventstore.tables import MAX_AGGREGATE_ID, MAX_AGGREGATE_TYPE

__all__ = [
    "ANY",
    "MAX_AGGREGATE_ID",
    "MAX_AGGREGATE_TYPE",
    "Event",
    "Metadata",
    "NewEvent",
    "StreamId",
    "UnknownTenant",
    "VersionConflict",
    "append",
    "append_many",
    "event_at",
    "get_event",
    "get_events",
    "has_inline",
    "head_position",
    "hold_append_lock",
    "read_all",
    "read_stream",
    "register_inline",
    "safe_position",
    "stream_version",
]
