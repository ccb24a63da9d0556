"""The event-sourced core. Imports nothing from the features built on it."""

from webapp.eventstore.store import (
    ANY,
    Event,
    Metadata,
    NewEvent,
    StreamId,
    VersionConflict,
    append,
    append_many,
    get_event,
    get_events,
    head_position,
    hold_append_lock,
    read_all,
    read_stream,
    register_inline,
    stream_version,
)

__all__ = [
    "ANY",
    "Event",
    "Metadata",
    "NewEvent",
    "StreamId",
    "VersionConflict",
    "append",
    "append_many",
    "get_event",
    "get_events",
    "head_position",
    "hold_append_lock",
    "read_all",
    "read_stream",
    "register_inline",
    "stream_version",
]
