"""Flask-Login wiring. The session id is `<user id>:<session token>:<sign-in
secret>`: the session token is rotated on password change, "sign out other
sessions", a deletion request and an email-change revert (ending every other
session and remember-me cookie at once); the sign-in secret names this browser's
server-side row (signins.py), which signing out deletes."""

from __future__ import annotations

import dataclasses
import secrets
from datetime import timedelta
from urllib.parse import unquote, urlsplit

from flask import Flask, Response, current_app, redirect, request, session, url_for
from flask_login import LoginManager, current_user, login_user, logout_user

from webapp.accounts import signins
from webapp.accounts.users import User


class _LoginManager(LoginManager):  # type: ignore[misc]
    """Flask-Login's manager, deleting the remember cookie with the flags it was
    set with: its own deletion sends no `Secure`, `HttpOnly` or `SameSite`, which
    a scanner flags under https (the session cookie's deletion has them)."""

    def _clear_cookie(self, response: Response) -> None:
        config = current_app.config
        response.delete_cookie(
            config.get("REMEMBER_COOKIE_NAME", "remember_token"),
            domain=config.get("REMEMBER_COOKIE_DOMAIN"),
            path=config.get("REMEMBER_COOKIE_PATH", "/"),
            secure=bool(config.get("REMEMBER_COOKIE_SECURE")),
            httponly=bool(config.get("REMEMBER_COOKIE_HTTPONLY")),
            samesite=config.get("REMEMBER_COOKIE_SAMESITE"),
        )


# Pages whose plain GET lists the user's devices: their session check reads every
# live sign-in of the user with the user, one statement for both (`User.sign_ins`).
WITH_SIGN_INS = frozenset({"profile.show"})


def load_session_user(session_id: str) -> User | None:
    """Flask-Login's loader, once per request: the user, token and a live sign-in
    must all match. The user it returns is this request's copy of the row
    (`signed_in_user()`); views re-read it only after they changed it."""
    user_id, token, secret = (session_id.split(":") + ["", ""])[:3]
    if not user_id or not token or not secret:
        return None
    if request.method == "GET" and request.endpoint in WITH_SIGN_INS:
        user = signins.live_user_with_sign_ins(user_id, secret)
    else:
        user = signins.live_user(user_id, secret)
    if user is None or not secrets.compare_digest(user.session_token, token):
        return None
    user = dataclasses.replace(user, sign_in=secret)
    return signins.keep_alive(user)  # "last active" of Your devices: a write a minute at most


def signed_in_user() -> User:
    """The signed-in user as loaded for this request (the real object, not the
    proxy). Fresh until this request changes the account: then read the row again."""
    user = current_user._get_current_object()  # type: ignore[attr-defined]
    if not isinstance(user, User):
        raise LookupError("no signed-in user")
    return user


# What browsers strip from both ends of a URL before resolving it (C0 controls
# and space), and what they remove anywhere in it (tab, CR, LF).
_EDGE = "".join(chr(c) for c in range(0x21))
_REMOVED = str.maketrans("", "", "\t\r\n")


def _same_site_path(value: str) -> bool:
    """A path on this site: no scheme, no host, no backslash, no control character,
    no empty or dot segment that could turn into `//host` when resolved."""
    if not value.startswith("/") or "\\" in value:
        return False
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return False
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return False
    path = value.partition("?")[0].partition("#")[0]
    return "//" not in path and not any(s in (".", "..") for s in path.split("/"))


def safe_next(target: str | None) -> str | None:
    """`target` when it is a relative path on this site, else None.

    Checked after the normalisation browsers apply (strip C0 controls and spaces
    at the ends, drop tab/CR/LF anywhere, read a backslash as a slash), and
    percent-decoded too; anything that changes under that normalisation is
    refused rather than repaired."""
    if not target or len(target) > 2048:
        return None
    normalised = target.strip(_EDGE).translate(_REMOVED).replace("\\", "/")
    if normalised != target:
        return None
    if not _same_site_path(target) or not _same_site_path(unquote(target)):
        return None
    return target


def sign_in(user: User, remember: bool = False) -> None:
    # A fresh session on sign-in: nothing from before (e.g. a planted id) survives.
    session.clear()
    secret = signins.start(user)
    login_user(dataclasses.replace(user, sign_in=secret), remember=remember, fresh=True)


def sign_out() -> None:
    """End this browser's session on the server and drop both of its cookies."""
    if current_user.is_authenticated:
        signins.end(current_user, current_user.sign_in)
    session.clear()
    # After the clear: logout_user() marks the remember cookie for deletion in
    # the session, which the clear would otherwise throw away.
    logout_user()


def refresh_session(user: User) -> None:
    """Keep this browser signed in after the user's session token was rotated
    (`user` is the fresh row, carrying the new token)."""
    login_user(
        dataclasses.replace(user, sign_in=current_user.sign_in),
        remember=bool(request.cookies.get("remember_token")),
    )


def init_app(app: Flask) -> None:
    app.config.setdefault("REMEMBER_COOKIE_DURATION", timedelta(days=30))
    manager = _LoginManager()
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
