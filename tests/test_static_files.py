"""Static files and the favicon: versioned URLs cached for a year; `/favicon.ico`
never 404s; an unversioned or outdated URL is revalidated, never cached stale."""

from __future__ import annotations

import re

from webapp.core.static_files import ONE_YEAR, digest


def linked(html: str, rel: str) -> str:
    match = re.search(rf'<link rel="{rel}" href="([^"]+)"', html)
    assert match, f"no <link rel={rel}> in the page"
    return match.group(1)


def test_every_page_links_the_svg_favicon_with_a_versioned_url(client):
    href = linked(client.get("/").get_data(as_text=True), "icon")
    assert re.fullmatch(r"/static/favicon\.svg\?v=[0-9a-f]{12}", href)
    with client.get(href) as resp:
        assert resp.status_code == 200
        assert resp.mimetype == "image/svg+xml"
        assert resp.get_data(as_text=True).startswith("<svg")


def test_versioned_static_files_are_cached_for_a_year(client):
    page = client.get("/").get_data(as_text=True)
    for href in (linked(page, "icon"), linked(page, "stylesheet")):
        with client.get(href) as resp:
            cc = resp.cache_control
            assert (cc.public, cc.max_age, cc.immutable) == (True, ONE_YEAR, True), href


def test_favicon_ico_redirects_to_the_svg_and_does_not_404(client):
    resp = client.get("/favicon.ico")
    assert resp.status_code == 301
    assert resp.headers["Location"] == linked(client.get("/").get_data(as_text=True), "icon")
    with client.get("/favicon.ico", follow_redirects=True) as followed:
        assert (followed.status_code, followed.mimetype) == (200, "image/svg+xml")


def test_unversioned_or_outdated_urls_are_revalidated_not_cached_for_long(client):
    for url in ("/static/app.css", "/static/app.css?v=000000000000"):
        with client.get(url) as resp:
            assert resp.status_code == 200
            assert resp.cache_control.no_cache and not resp.cache_control.immutable, url
            assert resp.cache_control.max_age is None, url


def test_missing_static_files_are_404_not_500(client):
    assert client.get("/static/nope.css").status_code == 404
    assert client.get("/static/nope.css?v=abc").status_code == 404


def test_the_version_changes_when_the_file_changes(tmp_path):
    (tmp_path / "a.css").write_text("body { color: red }")
    before = digest(str(tmp_path), "a.css")
    (tmp_path / "a.css").write_text("body { color: blue; }")
    after = digest(str(tmp_path), "a.css")
    assert before and after and before != after
    assert digest(str(tmp_path), "../a.css") is None
    assert digest(str(tmp_path), "missing.css") is None
