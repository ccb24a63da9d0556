"""Fixtures for mail tests: a real SMTP server (aiosmtpd) that can be stopped,
started again and made to hang mid-DATA, and a private redis-server that a
test may stop and start (never the shared one)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from flask import Flask
from redis import Redis
from rq import SimpleWorker

from tests.accounts.conftest import make_config  # noqa: F401  (cheap argon2, memory limits)
from webapp import embedded_redis
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


@pytest.fixture
def smtp(app: Flask, make_config: Callable[..., Any]) -> Iterator[SmtpServer]:  # noqa: F811
    """The app sends through a real SMTP server on localhost."""
    server = SmtpServer()
    server.start()
    app.config["APP_CONFIG"] = make_config(
        mail_backend="smtp", smtp_host="127.0.0.1", smtp_port=server.port, smtp_timeout=2
    )
    try:
        yield server
    finally:
        server.inbox.hang.clear()
        server.stop()


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
        SimpleWorker(list(QUEUES), connection=Redis.from_url(self.url)).work(
            burst=True, logging_level="WARNING"
        )


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    r = PrivateRedis(tmp_path / "private-redis" / "redis.sock")
    r.start()
    try:
        yield r
    finally:
        r.stop()
