"""Routes that belong to no feature: the home page and the health check."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Blueprint, Flask, Response, current_app, render_template
from sqlalchemy.exc import SQLAlchemyError

from webapp.core import db, security, writable
from webapp.core.version import VERSION

log = logging.getLogger(__name__)

bp = Blueprint("core", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html")


def _health_body(status: str, database: str) -> bytes:
    body = {"status": status, "database": database, "version": VERSION}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


# Built once: the answers are constant bytes (QuickHealth sends them as they are).
HEALTHY = _health_body("ok", "ok")
UNHEALTHY = _health_body("unavailable", "unreachable")
UNREACHABLE = "unreachable"
# What the database is, and the body that says it.
BODIES = {
    writable.OK: HEALTHY,
    UNREACHABLE: UNHEALTHY,
    writable.FULL: _health_body("unavailable", writable.FULL),
    writable.READ_ONLY: _health_body("unavailable", writable.READ_ONLY),
}


class DatabaseCheck:
    """Whether the database answered a `SELECT 1` and takes writes (not full,
    not read-only: `webapp.core.writable`), asked at most every `max_age`
    seconds per process: a load balancer polling every few seconds sees every
    outage, while a flood of /healthz (it is public and not rate limited)
    costs the database one statement per second per process, not one per
    request. A failed check is never kept: the next request asks again, so
    the answer turns healthy as soon as the database is back."""

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self._ok_at = float("-inf")
        self._lock = threading.Lock()

    def healthy(self) -> bool:
        return self.state() == writable.OK

    def state(self) -> str:
        """`ok`, `unreachable`, `full` or `read-only`."""
        if time.monotonic() - self._ok_at < self.max_age:
            return writable.OK
        with self._lock:  # one check at a time; the others take its answer
            if time.monotonic() - self._ok_at < self.max_age:
                return writable.OK
            try:
                db.ping()
                what = writable.condition(db.get_engine())
            except (SQLAlchemyError, OSError) as exc:
                log.warning("health check: the database does not answer: %s", exc)
                return UNREACHABLE
            if what != writable.OK:
                log.warning("health check: the database refuses writes (%s)", what)
                return what
            self._ok_at = time.monotonic()
            return writable.OK


@bp.get("/healthz")
def healthz() -> Response:
    check: DatabaseCheck = current_app.extensions["core.database_check"]
    state = check.state()
    if state == writable.OK:
        resp = Response(HEALTHY, 200, mimetype="application/json")
    else:
        resp = Response(BODIES[state], 503, mimetype="application/json")
        resp.headers["Retry-After"] = "5"
    resp.headers["Cache-Control"] = "no-store"
    return resp


# What Flask's answer to `GET /healthz` carries besides its body: the view's own
# headers, the app-wide ones (webapp/core/security.py), and the `Vary: Cookie` Flask
# adds (Flask-Login's after-request hook looks into the session).
_HEADERS = [
    ("Content-Type", "application/json"),
    ("Cache-Control", "no-store"),
    *security.HEADERS,
    ("Vary", "Cookie"),
]
_ANSWERS = {
    state: (
        ("200 OK", [("Content-Length", str(len(body))), *_HEADERS], body)
        if state == writable.OK
        else (
            "503 SERVICE UNAVAILABLE",
            [("Content-Length", str(len(body))), *_HEADERS, ("Retry-After", "5")],
            body,
        )
    )
    for state, body in BODIES.items()
}
Observe = Callable[[str, str, int, float], None]
StartResponse = Callable[..., Any]


class QuickHealth:
    """WSGI layer in front of the app: `GET /healthz` answered without Flask's
    request machinery (a load balancer's probe, and the one public URL that
    touches nothing but the cached database check), with the same status, body
    and headers as the view above, and counted in the same request metrics.
    Every other request, and `/healthz` with another method, goes to the app."""

    def __init__(self, app: Callable[..., Iterable[bytes]], check: DatabaseCheck) -> None:
        self.app = app
        self.check = check
        self.observe: Observe | None = None  # set when request metrics are on

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/healthz" or environ.get("REQUEST_METHOD") != "GET":
            return self.app(environ, start_response)
        started = time.perf_counter()
        status, headers, body = _ANSWERS[self.check.state()]
        start_response(status, list(headers))
        if self.observe is not None:
            self.observe("GET", "/healthz", int(status[:3]), time.perf_counter() - started)
        return [body]


def init_app(app: Flask) -> None:
    check = app.extensions["core.database_check"] = DatabaseCheck(
        app.config["APP_CONFIG"].healthz_cache_ms / 1000
    )
    app.register_blueprint(bp)
    quick = QuickHealth(app.wsgi_app, check)
    quick.observe = app.extensions.get("metrics.observe")
    app.wsgi_app = quick  # type: ignore[method-assign]
