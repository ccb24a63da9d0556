"""Driving the pages like a browser: the test client that gives each request a
fresh `g`, the one CSRF-and-post helper, htmx GETs and file downloads."""

from __future__ import annotations

import io
import json
import re
import zipfile
from typing import Any

import pytest
from flask import g
from flask.testing import FlaskClient


class FreshGClient(FlaskClient):
    """The `app` fixture keeps one app context pushed, and Flask then reuses it
    (and its `g`) for every test request: Flask-Login's cached user and
    Flask-WTF's cached token would leak from one request into the next. A real
    server gives each request a fresh `g`; so does this client."""

    def open(self, *args: Any, **kwargs: Any) -> Any:
        g.__dict__.clear()
        return super().open(*args, **kwargs)


@pytest.fixture
def client_class() -> type[FlaskClient]:
    """The test client class of the `app` fixture."""
    return FreshGClient


def csrf_token(client: FlaskClient, path: str = "/login") -> str:
    """The CSRF token of the page at `path` (its `csrf-token` meta tag)."""
    html = client.get(path).get_data(as_text=True)
    match = re.search(r'<meta name="csrf-token" content="([^"]+)"', html)
    assert match, f"{path} has no csrf-token meta tag"
    return match.group(1)


def _token_page(path: str) -> str:
    """A page that shows a form to whoever may post to `path` (signed in or not)."""
    for prefix, page in (("/profile", "/profile"), ("/privacy", "/privacy"), ("/admin", "/admin/runs")):  # fmt: skip
        if path.startswith(prefix):
            return page
    return "/login"


def post(client: FlaskClient, path: str, htmx: bool = False, **data: str) -> Any:
    """POST `data` to `path` as its form would, with a real CSRF token (taken
    from a page of the same screen unless `csrf_token` is given)."""
    data.setdefault("csrf_token", csrf_token(client, _token_page(path)))
    return client.post(path, data=data, headers={"HX-Request": "true"} if htmx else {})


def htmx_get(client: FlaskClient, path: str) -> Any:
    return client.get(path, headers={"HX-Request": "true"})


def fetch(client: FlaskClient, path: str, **kw: Any) -> Any:
    """GET and close the answer (a file download holds the file open until then)."""
    resp = client.get(path, **kw)
    resp.get_data()
    resp.close()
    return resp


def without_csrf(html: str) -> str:
    """`html` with its CSRF token replaced: one per render, signed with the
    second of the render, so two renders a second apart differ only there
    (every one of the session's tokens is accepted). A page without one is
    returned as it is."""
    token = re.search(r'<meta name="csrf-token" content="([^"]+)"', html)
    return html.replace(token.group(1), "CSRF-TOKEN") if token else html


def unzip(data: bytes) -> dict[str, Any]:
    """A data export's names, its bundle.json and its README.txt."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = sorted(zf.namelist())
        return {
            "names": names,
            "bundle": json.loads(zf.read("bundle.json")),
            "readme": zf.read("README.txt").decode(),
        }
