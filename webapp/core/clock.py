"""The single clock. Production uses the system time; tests move a frozen one."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class Clock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FrozenClock(Clock):
    """A clock that only moves when told to (thread-safe)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        if not isinstance(delta, timedelta):
            delta = timedelta(seconds=delta)
        with self._lock:
            self._now += delta
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when


_clock: Clock = Clock()


def now() -> datetime:
    return _clock.now()


def get_clock() -> Clock:
    return _clock


def set_clock(clock: Clock) -> Clock:
    """Install a clock process-wide; returns the previous one."""
    global _clock
    previous, _clock = _clock, clock
    return previous
