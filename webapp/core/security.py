"""App-wide protections, set up by `create_app` before any feature: the client
address behind trusted reverse proxies, CSRF on every form, strict response
headers, and the app-wide error pages (400 CSRF, 413, 429, 500, and 503 while
the database does not answer). Features never set these up themselves, so the order they are wired in
does not matter (a feature exempts a blueprint from CSRF with `csrf.exempt`,
which works before and after `init_app`)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from flask import Flask, Request, Response, current_app, make_response, render_template, request
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from flask_babel import gettext
from flask_wtf.csrf import CSRFError, CSRFProtect
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from werkzeug.middleware.proxy_fix import ProxyFix

from webapp.core import writable

log = logging.getLogger(__name__)

csrf = CSRFProtect()

GENERIC_ERROR = "profile.errors.generic"
TOO_MANY = "auth.errors.tooManyAttempts"
UNAVAILABLE = "errors.unavailable"
# What the drivers raise while the database is unreachable, restarting or
# dropped the connection (also a SQLite file locked past its busy timeout).
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)


def is_unavailable(exc: BaseException) -> bool:
    """The database did not answer, or refused the write: its disk is full or
    it is read-only (`webapp.core.writable`). Either way the request's
    transaction was rolled back and the user may try again later."""
    return isinstance(exc, DATABASE_UNAVAILABLE) or (
        isinstance(exc, DBAPIError) and writable.refusal(exc) is not None
    )


CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


# Session cookies opened (signature checked, payload decoded) per process, by
# their exact value: a browser sends the same cookie on request after request.
OPENED_KEPT = 4096
_SCALARS = (str, int, float, bool, type(None))


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, with its signing serializer built once per
    set of keys (Flask builds one per request, and itsdangerous test-serialises
    an empty dict to build it), and each cookie value opened once per process:
    checking the signature and decoding the payload cost more than the rest of
    Flask's request set-up. Same cookie, same keys, same checks: a kept value is
    still refused once older than the session's lifetime (itsdangerous's rule,
    from the time it was signed), a value signed with other keys is another
    entry, and only payloads of plain values are kept (a session holding a list,
    e.g. flashed messages, is decoded every time, so no request can change a
    kept one in place)."""

    clock = staticmethod(time.time)

    def __init__(self) -> None:
        self._serializers: dict[tuple[object, ...], URLSafeTimedSerializer | None] = {}
        self._opened: dict[tuple[object, str], tuple[dict[str, Any], int]] = {}
        self._lock = threading.Lock()

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        key = (app.secret_key, *(app.config["SECRET_KEY_FALLBACKS"] or ()))
        try:
            return self._serializers[key]
        except KeyError:
            made = self._serializers[key] = super().get_signing_serializer(app)
            return made

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        s = self.get_signing_serializer(app)
        if s is None:
            return None
        val = request.cookies.get(self.get_cookie_name(app))
        if not val:
            return self.session_class()
        max_age = int(app.permanent_session_lifetime.total_seconds())
        key = (s, val)
        kept = self._opened.get(key)
        if kept is not None and 0 <= int(self.clock()) - kept[1] <= max_age:
            return self.session_class(kept[0])
        try:
            data, signed_at = s.loads(val, max_age=max_age, return_timestamp=True)
        except BadSignature:
            return self.session_class()
        if isinstance(data, dict) and all(isinstance(v, _SCALARS) for v in data.values()):
            with self._lock:
                if len(self._opened) >= OPENED_KEPT:
                    self._opened.clear()
                self._opened[key] = (dict(data), int(signed_at.timestamp()))
        return self.session_class(data)


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
        # An htmx request's answer varies by it (pages.render says so itself;
        # this covers every other view). Parsed only when it is not there yet.
        if "HTTP_HX_REQUEST" in request.environ and "hx-request" not in (
            headers.get("Vary", "").lower()
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

    @app.errorhandler(DBAPIError)
    def _database_error(exc: DBAPIError) -> Response:
        # PostgreSQL's read-only refusal is an InternalError: 503 like the others.
        # Any other database error is a bug: raised on, to the 500 page and the log.
        if writable.refusal(exc) is None:
            raise exc
        return unavailable(exc)


def unavailable(exc: Exception) -> Response:
    """503 with Retry-After: the database did not answer (a write's transaction
    was rolled back, unless the connection died during its COMMIT). Rendered as
    signed out (the page would otherwise ask the database for the user again);
    the session itself is untouched."""
    what = writable.refusal(exc)
    if what is None:
        log.warning("database unavailable: %s", exc)
    else:
        log.warning("database refuses writes (%s): %s", what, type(exc).__name__)
    manager = getattr(current_app, "login_manager", None)
    if manager is not None:
        manager._update_request_context_with_user()  # anonymous, for this rendering only
    resp = make_response(render_template("error.html", message=gettext(UNAVAILABLE)), 503)
    resp.headers["Retry-After"] = "5"
    return resp
