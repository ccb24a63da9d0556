"""Flask-Login wiring. The session id is `<user id>:<session token>`; the token is
rotated on password change, on "sign out other sessions" and on an email-change
revert, which ends every other session and remember-me cookie at once."""

from __future__ import annotations

import secrets
from datetime import timedelta

from flask import Flask, Response, redirect, request, session, url_for
from flask_login import LoginManager, login_user

from webapp import db
from webapp.accounts.users import User, get_user


def load_session_user(session_id: str) -> User | None:
    """Flask-Login's loader: `<user id>:<session token>`, both must match."""
    user_id, _, token = session_id.partition(":")
    if not user_id or not token:
        return None
    with db.reading() as conn:
        user = get_user(conn, user_id)
    if user is None or not secrets.compare_digest(user.session_token, token):
        return None
    return user


def safe_next(target: str | None) -> str | None:
    """Only same-site paths: no scheme, no host, no `//` or backslash tricks."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return None
    return target


def sign_in(user: User, remember: bool = False) -> None:
    # A fresh session on sign-in: nothing from before (e.g. a planted id) survives.
    session.clear()
    login_user(user, remember=remember, fresh=True)


def refresh_session(user: User) -> None:
    """Keep this browser signed in after the user's session token was rotated
    (`user` is the fresh row, carrying the new token)."""
    login_user(user, remember=bool(request.cookies.get("remember_token")))


def init_app(app: Flask) -> None:
    app.config.setdefault("REMEMBER_COOKIE_DURATION", timedelta(days=30))
    manager = LoginManager()
    manager.init_app(app)
    manager.user_loader(load_session_user)

    @manager.unauthorized_handler
    def _unauthorized() -> Response:
        target = url_for("accounts.login", next=request.path)
        if request.headers.get("HX-Request"):
            resp = Response(status=401)
            resp.headers["HX-Redirect"] = target
            return resp
        return redirect(target)  # type: ignore[return-value]
