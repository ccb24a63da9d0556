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

from webapp.core import db, security
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


class DatabaseCheck:
    """Whether the database answered a `SELECT 1`, asked at most every
    `max_age` seconds per process: a load balancer polling every few seconds
    sees every outage, while a flood of /healthz (it is public and not rate
    limited) costs the database one statement per second per process, not one
    per request. A failed check is never kept: the next request asks again, so
    the answer turns healthy as soon as the database is back."""

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self._ok_at = float("-inf")
        self._lock = threading.Lock()

    def healthy(self) -> bool:
        if time.monotonic() - self._ok_at < self.max_age:
            return True
        with self._lock:  # one check at a time; the others take its answer
            if time.monotonic() - self._ok_at < self.max_age:
                return True
            try:
                db.ping()
            except (SQLAlchemyError, OSError) as exc:
                log.warning("health check: the database does not answer: %s", exc)
                return False
            self._ok_at = time.monotonic()
            return True


@bp.get("/healthz")
def healthz() -> Response:
    check: DatabaseCheck = current_app.extensions["core.database_check"]
    if check.healthy():
        resp = Response(HEALTHY, 200, mimetype="application/json")
    else:
        resp = Response(UNHEALTHY, 503, mimetype="application/json")
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
    True: ("200 OK", [("Content-Length", str(len(HEALTHY))), *_HEADERS], HEALTHY),
    False: (
        "503 SERVICE UNAVAILABLE",
        [("Content-Length", str(len(UNHEALTHY))), *_HEADERS, ("Retry-After", "5")],
        UNHEALTHY,
    ),
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
        status, headers, body = _ANSWERS[self.check.healthy()]
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
