"""App-wide protections, set up by `create_app` before any feature: the client
address behind trusted reverse proxies, CSRF on every form, strict response
headers, and the app-wide error pages (400 CSRF, 413, 429, 500, and 503 while
the database does not answer). Features never set these up themselves, so the order they are wired in
does not matter (a feature exempts a blueprint from CSRF with `csrf.exempt`,
which works before and after `init_app`)."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, current_app, make_response, render_template, request
from flask.sessions import SecureCookieSessionInterface
from flask_babel import gettext
from flask_wtf.csrf import CSRFError, CSRFProtect
from itsdangerous import URLSafeTimedSerializer
from sqlalchemy.exc import InterfaceError, OperationalError
from werkzeug.middleware.proxy_fix import ProxyFix

log = logging.getLogger(__name__)

csrf = CSRFProtect()

GENERIC_ERROR = "profile.errors.generic"
TOO_MANY = "auth.errors.tooManyAttempts"
UNAVAILABLE = "errors.unavailable"
# What the drivers raise while the database is unreachable, restarting or
# dropped the connection (also a SQLite file locked past its busy timeout).
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, with its signing serializer built once per
    set of keys: Flask builds one per request, and itsdangerous test-serialises
    an empty dict to build it. Same cookie, same keys, same checks."""

    def __init__(self) -> None:
        self._serializers: dict[tuple[object, ...], URLSafeTimedSerializer | None] = {}

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        key = (app.secret_key, *(app.config["SECRET_KEY_FALLBACKS"] or ()))
        try:
            return self._serializers[key]
        except KeyError:
            made = self._serializers[key] = super().get_signing_serializer(app)
            return made


def init_app(app: Flask) -> None:
    app.session_interface = SessionInterface()
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


_LOWER = tuple((name.lower(), name, value) for name, value in HEADERS)


def _headers(app: Flask) -> None:
    @app.after_request
    def _set(resp: Response) -> Response:
        headers = resp.headers
        # One pass over the few headers there are (a missing name costs
        # Werkzeug's Headers a KeyError per lookup).
        present = {key.lower() for key, _ in headers.items()}
        for lower, name, value in _LOWER:
            if lower not in present:
                headers.add(name, value)
        if "HTTP_HX_REQUEST" in request.environ or (
            "vary" in present and "HX-Request" in resp.vary
        ):
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

    app.register_error_handler(OperationalError, unavailable)
    app.register_error_handler(InterfaceError, unavailable)


def unavailable(exc: Exception) -> Response:
    """503 with Retry-After: the database did not answer (a write's transaction
    was rolled back, unless the connection died during its COMMIT). Rendered as
    signed out (the page would otherwise ask the database for the user again);
    the session itself is untouched."""
    log.warning("database unavailable: %s", exc)
    manager = getattr(current_app, "login_manager", None)
    if manager is not None:
        manager._update_request_context_with_user()  # anonymous, for this rendering only
    resp = make_response(render_template("error.html", message=gettext(UNAVAILABLE)), 503)
    resp.headers["Retry-After"] = "5"
    return resp
