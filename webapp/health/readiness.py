"""`GET /readyz`: may this web process take traffic? Yes when the database
answers, the schema is at the migrations' head (a process started before
`flask db upgrade` is not ready), and Redis answers. Public like `/healthz`,
never cached, and asked at most every `HEALTHZ_CACHE_MS` per process (a
failed check is never reused)."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from flask import Blueprint, Flask, Response, current_app
from sqlalchemy import text

from webapp.core import db, writable
from webapp.core.redis_conn import get_redis

log = logging.getLogger(__name__)

bp = Blueprint("readiness", __name__)


def migration_heads(database_url: str) -> set[str]:
    # Alembic is imported here, at the first /readyz of a web process: every
    # `flask ...` command, the worker and the scheduler build the app too.
    from alembic.script import ScriptDirectory

    from webapp.core.migrate import alembic_config

    return set(ScriptDirectory.from_config(alembic_config(database_url)).get_heads())


def check(heads: set[str]) -> dict[str, str]:
    """What each dependency answers: ok, unreachable, full or read-only (the
    database), or (migrations) behind."""
    out: dict[str, str] = {}
    try:
        with db.reading() as conn:
            applied = set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        # ok, or full / read-only: it answers but refuses writes (webapp.core.writable)
        out["database"] = writable.condition(db.get_engine())
        out["migrations"] = "ok" if applied == heads else "behind"
    except Exception as exc:  # unreachable, or never migrated
        log.warning("readiness: the database does not answer: %s", type(exc).__name__)
        out["database"] = out["migrations"] = "unreachable"
    try:
        get_redis().ping()
        out["redis"] = "ok"
    except Exception as exc:
        log.warning("readiness: Redis does not answer: %s", type(exc).__name__)
        out["redis"] = "unreachable"
    return out


class Readiness:
    def __init__(self, database_url: str, max_age: float) -> None:
        self.database_url, self.max_age = database_url, max_age
        self.heads: set[str] | None = None  # read at the first /readyz, then kept
        self._ok_at = float("-inf")
        self._lock = threading.Lock()

    def answer(self) -> dict[str, Any]:
        ok = {"status": "ok", "database": "ok", "migrations": "ok", "redis": "ok"}
        with self._lock:
            if time.monotonic() - self._ok_at < self.max_age:
                return ok
            if self.heads is None:
                self.heads = migration_heads(self.database_url)
            found = check(self.heads)
            if all(v == "ok" for v in found.values()):
                self._ok_at = time.monotonic()
                return ok
            return {"status": "unavailable", **found}


@bp.get("/readyz")
def readyz() -> Response:
    answer = current_app.extensions["health.readiness"].answer()
    code = 200 if answer["status"] == "ok" else 503
    resp = Response(json.dumps(answer) + "\n", code, mimetype="application/json")
    if code == 503:
        resp.headers["Retry-After"] = "5"
    resp.headers["Cache-Control"] = "no-store"
    return resp


def init_app(app: Flask) -> None:
    cfg = app.config["APP_CONFIG"]
    app.extensions["health.readiness"] = Readiness(cfg.database_url, cfg.healthz_cache_ms / 1000)
    app.register_blueprint(bp)
