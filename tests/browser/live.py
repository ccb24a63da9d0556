"""The app served in a thread for Chromium, by werkzeug's server.

Every response body is read and closed inside the app call, before a byte goes
to the socket. Werkzeug's server closes the body only after it has drained the
client's socket, and a browser that resets the connection (it drops a favicon
request it no longer needs) makes that drain raise first: the static file's
handle was then left to the garbage collector, and its ResourceWarning failed
whichever test was running. A buffered body has nothing to leak.

When the block ends, the requests still being answered are waited for: a page's
script fires requests as it loads (the sign-in page asks for passkey options),
and one still writing would otherwise race the database cleanup that follows."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from werkzeug.serving import make_server


class InFlight:
    """How many calls of the app are running; `wait_idle` until none is."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    @contextmanager
    def one(self) -> Iterator[None]:
        with self._idle:
            self._count += 1
        try:
            yield
        finally:
            with self._idle:
                self._count -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)


def buffered(
    app: Callable[..., Iterable[bytes]], in_flight: InFlight | None = None
) -> Callable[..., Iterable[bytes]]:
    """`app` as a WSGI app whose body is a list, its iterator already closed;
    only a stream of server-sent events is passed on as it comes."""
    calls = in_flight or InFlight()

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with calls.one():
            return answer(environ, start_response)

    def answer(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        streamed: list[bool] = []

        def start(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
            kinds = [v for k, v in headers if k.lower() == "content-type"]
            streamed.append(bool(kinds) and kinds[0].startswith("text/event-stream"))
            return start_response(status, headers, *exc)

        body = app(environ, start)
        if streamed and streamed[0]:
            return body  # server-sent events go out as they come (the server closes it)
        try:
            return [b"".join(body)]
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()

    return wsgi


@contextmanager
def serving(app: Any, join_requests: bool = False) -> Iterator[Any]:
    """Serve `app` on a free port until the block ends; yields the server.

    `join_requests=True` waits, at the end, for every request thread to
    finish: only for a client that has closed all its connections by then
    (a browser's idle preconnected socket would keep its thread waiting)."""
    in_flight = InFlight()
    srv = make_server("127.0.0.1", 0, buffered(app, in_flight), threaded=True)
    srv.daemon_threads = not join_requests  # server_close() joins non-daemon ones
    srv.block_on_close = join_requests
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        assert in_flight.wait_idle(30), "a request was still being answered 30 s after the test"
        srv.server_close()
        thread.join(5)
