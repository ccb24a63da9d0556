"""Errors under /api/ are problem details whatever raised them: a path or a
method the API does not have, a bug, the database gone. None carries a
stack trace or SQL."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy.exc import OperationalError

from tests.support.api import bearer, problem
from webapp import create_app
from webapp.api.views import runs as run_views

RUN = "6f1c2a0e-4b7d-4c35-9a8e-2d5f7e913b64"


def test_unknown_paths_and_methods(client: Any, token: Any) -> None:
    secret = token()
    p = problem(client.get("/api/v1/nothing", headers=bearer(secret)), 404)
    assert p["instance"] == "/api/v1/nothing"
    problem(client.get("/api/v2/runs", headers=bearer(secret)), 404)
    resp = client.delete("/api/v1/events", headers=bearer(secret))
    problem(resp, 405)
    assert "POST" in resp.headers["Allow"]
    problem(client.get(f"/api/v1/runs/{RUN}?verbose=1", headers=bearer(secret)), 400)
    # The rest of the site keeps its own pages.
    assert client.get("/nothing").mimetype == "text/html"


@pytest.fixture
def unguarded(make_config: Any, app: Flask) -> Flask:
    """The app as in production: an exception becomes the 500 answer."""
    live = create_app(make_config())
    live.config["PROPAGATE_EXCEPTIONS"] = False
    return live


def test_a_bug_answers_500_without_its_trace(
    unguarded: Flask, token: Any, monkeypatch: Any, caplog: Any
) -> None:
    secret = token()

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("SELECT password_hash FROM users WHERE id = 'secret'")

    monkeypatch.setattr(run_views.queries, "runs_page", broken)
    resp = unguarded.test_client().get("/api/v1/runs", headers=bearer(secret))
    p = problem(resp, 500)
    assert "password_hash" not in resp.get_data(as_text=True) and "request id" in p["detail"]
    assert "password_hash" in caplog.text  # ...but the log has it, for the operator


def test_the_database_gone_answers_503_with_retry_after(
    unguarded: Flask, token: Any, monkeypatch: Any
) -> None:
    secret = token()

    def gone(*_a: Any, **_k: Any) -> Any:
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    monkeypatch.setattr(run_views.queries, "runs_page", gone)
    resp = unguarded.test_client().get("/api/v1/runs", headers=bearer(secret))
    problem(resp, 503)
    assert resp.headers["Retry-After"] == "5"
    assert "connection refused" not in resp.get_data(as_text=True)
