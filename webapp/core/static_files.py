"""Static files: cached for a year by the browser, made safe by versioned URLs.

`url_for('static', filename=...)` adds `?v=<content digest>`, so an edited file
gets a new URL; only a request whose `v` matches the file's current digest is
marked `immutable` for a year. Anything else (no or an old `v`) is revalidated
with its ETag, as Flask does by default. `/favicon.ico`, which browsers ask for
on their own, redirects to the versioned SVG favicon.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from flask import Flask, redirect, request, url_for
from werkzeug.security import safe_join
from werkzeug.wrappers import Response as BaseResponse

ONE_YEAR = 365 * 24 * 3600
ONE_DAY = 24 * 3600


def digest(folder: str, filename: str) -> str | None:
    """Short content digest of a file under `folder`; None when there is no such file."""
    path = safe_join(folder, filename)
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _digest(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=256)
def _digest(path: str, _mtime_ns: int, _size: int) -> str:
    # mtime and size are part of the cache key: an edited file is hashed again.
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def init_app(app: Flask) -> None:
    folder = str(app.static_folder)

    @app.url_defaults
    def _versioned(endpoint: str, values: dict[str, Any]) -> None:
        if endpoint == "static" and "filename" in values and "v" not in values:
            version = digest(folder, values["filename"])
            if version:
                values["v"] = version

    serve = app.view_functions["static"]

    def static(filename: str) -> BaseResponse:
        # Wraps Flask's static view rather than adding an after-request hook,
        # which every other request would pay for.
        resp = cast(BaseResponse, serve(filename=filename))  # send_from_directory's answer
        if resp.status_code in (200, 304) and request.args.get("v") == digest(folder, filename):
            resp.cache_control.no_cache = None
            resp.cache_control.public = True
            resp.cache_control.max_age = ONE_YEAR
            resp.cache_control.immutable = True
        return resp

    app.view_functions["static"] = static

    @app.get("/favicon.ico")
    def favicon() -> BaseResponse:
        resp = redirect(url_for("static", filename="favicon.svg"), code=301)
        resp.cache_control.public = True
        resp.cache_control.max_age = ONE_DAY  # the target's URL changes with the icon
        return resp
