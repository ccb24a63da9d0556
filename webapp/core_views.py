"""Routes that belong to no feature: the home page and the health check."""

from __future__ import annotations

import logging
import threading
import time

from flask import Blueprint, Flask, Response, current_app, render_template
from sqlalchemy.exc import SQLAlchemyError

from webapp import db

log = logging.getLogger(__name__)

bp = Blueprint("core", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html")


HEALTHY = b'{"status":"ok","database":"ok"}\n'
UNHEALTHY = b'{"status":"unavailable","database":"unreachable"}\n'


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


def init_app(app: Flask) -> None:
    app.extensions["core.database_check"] = DatabaseCheck(
        app.config["APP_CONFIG"].healthz_cache_ms / 1000
    )
    app.register_blueprint(bp)
