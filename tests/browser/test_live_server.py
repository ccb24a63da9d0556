"""The browser tests' server closes every response body before it writes to
the socket, so a browser that resets a connection cannot leave a file open."""

from __future__ import annotations

import gc
import socket
import struct
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.browser.live import buffered, serving

ROOT = Path(__file__).resolve().parents[2]


class Body:
    def __init__(self) -> None:
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        yield b"fav"
        yield b"icon"

    def close(self) -> None:
        self.closed = True


def test_the_body_is_read_whole_and_closed_before_the_server_writes_it() -> None:
    body = Body()
    started: list[str] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Body:
        start_response("200 OK", [])
        started.append("yes")
        return body

    out = buffered(app)({}, lambda *a: None)
    assert out == [b"favicon"]
    assert body.closed
    assert started == ["yes"]


def test_a_static_file_arrives_whole_through_the_server(app: Any) -> None:
    with serving(app) as srv:
        url = f"http://127.0.0.1:{srv.server_port}/static/favicon.svg"
        with urllib.request.urlopen(url, timeout=5) as resp:
            got = resp.read()
    assert got == (ROOT / "static" / "favicon.svg").read_bytes()


def test_a_browser_resetting_the_connection_leaves_no_file_open(app: Any) -> None:
    """What failed CI once: Chromium reset a favicon request, werkzeug's
    drain of the socket raised before it closed the body, and the file's
    ResourceWarning surfaced in an unrelated test."""
    lost: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: lost.append(repr(u.exc_value))
    try:
        with serving(app, join_requests=True) as srv:  # every reset handled
            for _ in range(20):
                s = socket.create_connection(("127.0.0.1", srv.server_port), timeout=5)
                s.sendall(b"GET /static/favicon.svg HTTP/1.1\r\nHost: x\r\n\r\n")
                assert s.recv(1) == b"H"  # the response has started
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()  # a reset, not a FIN
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert lost == []
