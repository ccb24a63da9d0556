"""Who may enter `/admin`: signed-in admins only. Everyone else gets the app's
ordinary 404 for every URL under /admin, any method, before anything else is
looked at: not a CSRF error, a 405 for the wrong method or a redirect to add a
slash reveals that the console exists (an app-wide hook, since routing errors
never reach a blueprint's own). CSRF is then checked here, for admins, instead
of by the app-wide hook that would run first."""

from __future__ import annotations

from flask import Blueprint, Flask, abort, request
from flask_login import current_user

from webapp.core import actors
from webapp.core.security import csrf

bp = Blueprint("admin", __name__, url_prefix="/admin")
csrf.exempt(bp)  # checked in _gate, after the 404 for everyone who is not an admin


def is_admin() -> bool:
    return bool(current_user.is_authenticated and getattr(current_user, "is_admin", False))


def actor() -> str:
    """The signed-in admin, as recorded in the metadata of their actions' events."""
    return actors.user(str(current_user.id))


def _under_admin(path: str) -> bool:
    prefix = str(bp.url_prefix)
    return path == prefix or path.startswith(prefix + "/")


def _gate() -> None:
    if not _under_admin(request.path):
        return
    if not is_admin():
        abort(404)
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        csrf.protect()


def init_app(app: Flask) -> None:
    app.before_request(_gate)
    app.register_blueprint(bp)
