"""Fixtures and helpers for the privacy center's tests (the accounts' fixtures:
cheap argon2, in-memory rate limits, a signed-in `user`)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from flask.testing import FlaskClient

from tests.accounts.conftest import (  # noqa: F401  (fixtures)
    csrf_token,
    make_config,
    other_client,
    user,
)


def ppost(client: FlaskClient, path: str, htmx: bool = False, **data: str) -> Any:
    data.setdefault("csrf_token", csrf_token(client, "/privacy"))
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(path, data=data, headers=headers)


def htmx_get(client: FlaskClient, path: str) -> Any:
    return client.get(path, headers={"HX-Request": "true"})


def unzip(data: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = sorted(zf.namelist())
        return {
            "names": names,
            "bundle": json.loads(zf.read("bundle.json")),
            "readme": zf.read("README.txt").decode(),
        }


def fetch(client: FlaskClient, path: str, **kw: Any) -> Any:
    """GET and close the answer (a file download holds the file open until then)."""
    resp = client.get(path, **kw)
    resp.get_data()
    resp.close()
    return resp
