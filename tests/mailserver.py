"""Real servers a test can stop and start: an SMTP server (aiosmtpd) that can
also hang mid-DATA, and a private redis-server (never the shared one)."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from redis import Redis

from tests.support.burst import BurstWorker
from webapp.core import embedded_redis
from webapp.jobs.queue import QUEUES


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Inbox:
    """What the server accepted. With `hang` set, DATA is held (the client sits
    mid-send) until `hang` is cleared, then refused: that copy never arrives."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.hang = threading.Event()
        self.held = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.hang.is_set():
            self.held += 1
            while self.hang.is_set():
                await asyncio.sleep(0.05)
            return "451 try again later"
        self.messages.append(envelope)
        return "250 OK"

    def bodies(self) -> list[str]:
        return [e.content.decode("utf-8", "replace") for e in self.messages]


class SmtpServer:
    def __init__(self) -> None:
        self.inbox = Inbox()
        self.port = free_port()
        self._controller: Controller | None = None

    def start(self) -> None:
        self._controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


class PrivateRedis:
    def __init__(self, sock: Path) -> None:
        self.sock = sock
        self.url = embedded_redis.url_for(sock)
        self.proc: Any = None

    def start(self) -> None:
        self.proc = embedded_redis.start(self.sock)

    def stop(self) -> None:
        embedded_redis.stop(self.proc)

    def work(self) -> None:
        """The real RQ worker on this Redis, in burst mode."""
        BurstWorker(list(QUEUES), connection=Redis.from_url(self.url)).work(
            burst=True, logging_level="WARNING"
        )
