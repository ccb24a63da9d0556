"""Routes that belong to no feature: the home page and the health check."""

from __future__ import annotations

from flask import Blueprint, Flask, Response, render_template

from webapp import db

bp = Blueprint("core", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html")


HEALTHY = b'{"status":"ok"}\n'


@bp.get("/healthz")
def healthz() -> Response:
    db.ping()
    return Response(HEALTHY, 200, mimetype="application/json")


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
