"""The console's footer names the release (pyproject.toml's version) on every
page of the console, and only there."""

from __future__ import annotations

import tomllib

from flask.testing import FlaskClient

from webapp.core.config import ROOT

RELEASE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
PAGES = ("/admin/runs", "/admin/stuck", "/admin/projections", "/admin/queues", "/admin/accounts")


def test_every_console_page_names_the_release_in_its_footer(admin: FlaskClient) -> None:
    footer = f'<footer class="admin-footer"><p>Operations console {RELEASE}</p></footer>'
    for path in PAGES:
        page = admin.get(path)
        assert page.status_code == 200, path
        assert footer in page.get_data(as_text=True), path
    assert "<footer" not in admin.get("/profile").get_data(as_text=True)
