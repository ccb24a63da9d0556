"""The open streams of this process and the one reader that wakes them.

`open_stream` admits a stream while fewer than `max_streams` are open (else
None: the view answers 503). Every `poll_s` the reader thread (started with
the first stream, gone after the last) reads the stream versions of every
watched run in one query and wakes the streams whose run moved on. A
stream waits on its own `threading.Event`: under gevent's monkey patching,
a greenlet's wait, no thread."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import webapp.workflows as wf

log = logging.getLogger("webapp.live")


@dataclass
class Settings:
    max_streams: int = 500
    poll_s: float = 0.25


settings = Settings()


def configure(max_streams: int, poll_s: float) -> None:
    settings.max_streams, settings.poll_s = max_streams, poll_s


@dataclass(eq=False)
class Stream:
    key: tuple[str, str]  # (tenant, run)
    version: int  # the last version the stream has sent
    woken: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout: float) -> bool:
        """Until the run moves past `version`, or `timeout` seconds."""
        found = self.woken.wait(timeout)
        self.woken.clear()
        return found


_lock = threading.Lock()
_open: set[Stream] = set()
_reader: threading.Thread | None = None


def open_count() -> int:
    return len(_open)


def open_stream(tenant_id: str, run_id: str, version: int) -> Stream | None:
    """A new stream of this run, or None: the process has as many as it may."""
    global _reader
    with _lock:
        if len(_open) >= settings.max_streams:
            return None
        s = Stream((tenant_id, run_id), version)
        _open.add(s)
        if _reader is None or not _reader.is_alive():
            _reader = threading.Thread(target=_read, name="live-streams", daemon=True)
            _reader.start()
    return s


def close(s: Stream) -> None:
    with _lock:
        _open.discard(s)


def _read() -> None:
    """Wake each stream whose run's stream has moved past what it sent; ends
    when no stream is open."""
    global _reader
    while True:
        with _lock:
            streams = list(_open)
            if not streams:
                _reader = None
                return
        try:
            now = wf.stream_versions(list({s.key for s in streams}))
        except Exception:  # the database is away: the streams wait, the reader tries again
            log.warning("live streams could not read run versions", exc_info=True)
            now = {}
        for s in streams:
            if now.get(s.key, 0) > s.version:
                s.woken.set()
        threading.Event().wait(settings.poll_s)
