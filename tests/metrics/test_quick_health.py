"""`GET /healthz` is answered in front of Flask (webapp.ui.home.QuickHealth):
the same answer as the Flask view's, counted in the same request metrics, and
nothing else is answered there."""

from __future__ import annotations

import pytest
from flask import Flask
from werkzeug.test import Client

from tests.support.metrics import delta, scrape
from webapp.core.version import VERSION
from webapp.ui.home import QuickHealth

COUNT = "webapp_http_request_duration_seconds_count"


def _flask_itself(app: Flask) -> Client:
    """A client of the app behind the quick layer (Flask's own /healthz view)."""
    quick = app.wsgi_app
    assert isinstance(quick, QuickHealth)
    return Client(quick.app)


def test_the_quick_answer_is_the_flask_views_answer(app: Flask, client) -> None:
    quick = client.get("/healthz")
    flask = _flask_itself(app).get("/healthz")
    assert quick.status == flask.status == "200 OK"
    expected = b'{"status":"ok","database":"ok","version":"%s"}\n' % VERSION.encode()
    assert quick.get_data() == flask.get_data() == expected
    assert sorted(quick.headers.items()) == sorted(flask.headers.items())
    assert quick.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in quick.headers["Content-Security-Policy"]


@pytest.mark.parametrize("state", ["unreachable", "full", "read-only"])
def test_the_unhealthy_answer_is_the_flask_views_answer(app: Flask, client, state) -> None:
    check = app.extensions["core.database_check"]
    check.state = lambda: state  # what the database is (this app only)
    quick = client.get("/healthz")
    flask = _flask_itself(app).get("/healthz")
    assert quick.status_code == flask.status_code == 503
    assert quick.get_data() == flask.get_data()
    assert quick.json == {"status": "unavailable", "database": state, "version": VERSION}
    assert sorted(quick.headers.items()) == sorted(flask.headers.items())
    assert quick.headers["Retry-After"] == "5"


def test_quick_answers_are_counted_like_the_others(app: Flask, client) -> None:
    before = scrape(client)
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
    after = scrape(client)
    assert delta(after, before, COUNT, method="GET", route="/healthz", status="200") == 3


def test_other_methods_and_paths_go_to_flask(app: Flask, client) -> None:
    assert client.post("/healthz").status_code == 405  # Flask's routing, not the layer
    assert client.head("/healthz").status_code == 200
    assert client.get("/healthz/").status_code == 404
    assert client.get("/").status_code == 200
