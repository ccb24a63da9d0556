"""App-wide protections, set up by `create_app` before any feature: the client
address behind trusted reverse proxies, CSRF on every form, strict response
headers, and the app-wide error pages (400 CSRF, 413, 429, 500). Features never set these up themselves, so the order they are wired in
does not matter (a feature exempts a blueprint from CSRF with `csrf.exempt`,
which works before and after `init_app`)."""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, render_template, request
from flask_babel import gettext
from flask_wtf.csrf import CSRFError, CSRFProtect
from werkzeug.middleware.proxy_fix import ProxyFix

csrf = CSRFProtect()

GENERIC_ERROR = "profile.errors.generic"
TOO_MANY = "auth.errors.tooManyAttempts"

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def init_app(app: Flask) -> None:
    trusted = app.config["APP_CONFIG"].trusted_proxies
    if trusted:
        # X-Forwarded-For/-Proto set by the last `trusted` proxies become the
        # client address and scheme (per-address rate limits, secure cookies);
        # with none trusted the headers are ignored, as anyone can send them.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=trusted, x_proto=trusted)  # type: ignore[method-assign]
    # The token lives as long as the session (which sign-in renews).
    app.config["WTF_CSRF_TIME_LIMIT"] = None
    csrf.init_app(app)
    app.extensions["csrf"] = csrf
    _headers(app)
    _error_pages(app)


# Every answer's headers, built once (a view may set its own first).
HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
)


def _headers(app: Flask) -> None:
    @app.after_request
    def _set(resp: Response) -> Response:
        headers = resp.headers
        for name, value in HEADERS:
            if name not in headers:
                headers[name] = value
        if "HX-Request" in request.headers or "HX-Request" in resp.vary:
            resp.vary.add("HX-Request")
        return resp


def _error_pages(app: Flask) -> None:
    @app.errorhandler(CSRFError)
    def _csrf_error(_e: CSRFError) -> tuple[str, int]:
        return render_template("error.html", message=gettext("errors.csrf")), 400

    @app.errorhandler(413)
    def _too_large(_e: Any) -> tuple[str, int]:
        return render_template("error.html", message="The request is too large."), 413

    @app.errorhandler(429)
    def _too_many(_e: Any) -> tuple[str, int]:
        return render_template("error.html", message=gettext(TOO_MANY)), 429

    @app.errorhandler(500)
    def _server_error(_e: Any) -> tuple[str, int]:
        return render_template("error.html", message=gettext(GENERIC_ERROR)), 500
