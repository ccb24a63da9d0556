"""The event store's records: plain frozen dataclasses, no database. What the
store appends (`NewEvent`, to a `StreamId`, with `Metadata`) and what it
returns (`Event`). Code that only describes events (workflow definitions)
imports these and nothing of the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

ANY = -1  # expected_version that accepts whatever the stream is at


class VersionConflict(Exception):
    """Another writer appended to the stream first."""

    def __init__(self, stream: StreamId, expected: int, actual: int | None = None) -> None:
        super().__init__(
            f"version conflict on {stream.aggregate_type}/{stream.aggregate_id}: "
            f"expected {expected}, stream is at {actual if actual is not None else 'a newer version'}"
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class UnknownTenant(LookupError):
    """An append that must land in an existing tenant named one that is not."""

    def __init__(self, tenant_id: str) -> None:
        super().__init__(f"unknown tenant {tenant_id!r}")
        self.tenant_id = tenant_id


@dataclass(frozen=True)
class StreamId:
    tenant_id: str
    aggregate_type: str
    aggregate_id: str


@dataclass(frozen=True)
class Metadata:
    actor: str | None = None
    correlation_id: str | None = None
    causation_id: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "actor": self.actor,
            "correlation_id": self.correlation_id,
            "causation_id": self.causation_id,
        }


@dataclass(frozen=True)
class NewEvent:
    type: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    id: str
    tenant_id: str
    aggregate_type: str
    aggregate_id: str
    version: int
    type: str
    payload: dict[str, Any]
    metadata: dict[str, Any]
    recorded_at: datetime
    position: int

    @property
    def stream(self) -> StreamId:
        return StreamId(self.tenant_id, self.aggregate_type, self.aggregate_id)

    @property
    def ref(self) -> dict[str, Any]:
        """A reference other events can store instead of a copy of this one."""
        return {"eventId": self.id, "aggregateId": self.aggregate_id, "version": self.version}
