"""Routes that belong to no feature: the home page and the health check."""

from __future__ import annotations

from flask import Blueprint, Flask, render_template

from webapp import db

bp = Blueprint("core", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html")


@bp.get("/healthz")
def healthz() -> tuple[dict[str, str], int]:
    with db.reading() as conn:
        conn.exec_driver_sql("SELECT 1")  # plain SQL: nothing to compile or cache
    return {"status": "ok"}, 200


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
