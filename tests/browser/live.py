"""The app served in a thread for Chromium, by werkzeug's server.

Every response body is read and closed inside the app call, before a byte goes
to the socket. Werkzeug's server closes the body only after it has drained the
client's socket, and a browser that resets the connection (it drops a favicon
request it no longer needs) makes that drain raise first: the static file's
handle was then left to the garbage collector, and its ResourceWarning failed
whichever test was running. A buffered body has nothing to leak."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from werkzeug.serving import make_server


def buffered(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """`app` as a WSGI app whose body is a list, its iterator already closed;
    only a stream of server-sent events is passed on as it comes."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
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
    srv = make_server("127.0.0.1", 0, buffered(app), threaded=True)
    srv.daemon_threads = not join_requests  # server_close() joins non-daemon ones
    srv.block_on_close = join_requests
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
