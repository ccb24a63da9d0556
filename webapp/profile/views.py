"""The profile screen: one page, four sections, each its own form.

One URL per command, two renderings: an htmx request gets the section fragment
(plus out-of-band fragments), anything else the whole page with the section's
banner shown. `respond()` is the one place that decides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from flask import (
    Blueprint,
    Flask,
    Response,
    flash,
    get_flashed_messages,
    make_response,
    render_template,
    request,
)
from flask_babel import format_date, gettext, refresh
from flask_login import current_user, login_required

from webapp import db
from webapp.accounts import profile_commands as commands
from webapp.accounts import ratelimit, users
from webapp.accounts.commands import GENERIC, Outcome
from webapp.accounts.session import refresh_session
from webapp.accounts.users import User

log = logging.getLogger(__name__)
bp = Blueprint("profile", __name__, url_prefix="/profile")

SECTIONS = ("account", "password", "email", "danger")


@dataclass
class View:
    """What a render of the page or of one section needs."""

    user: User
    section: str | None = None
    banner: dict[str, str] | None = None
    errors: dict[str, bool] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    oob: tuple[str, ...] = ()

    def banner_for(self, section: str) -> dict[str, str] | None:
        return self.banner if section == self.section else None


def _me() -> User:
    # Re-read: the session's copy was loaded before this request's own change.
    with db.reading() as conn:
        user = users.get_user(conn, current_user.id)
    if user is None:
        raise LookupError("signed-in user has no row")
    return user


def _text(outcome: Outcome) -> str:
    params = dict(outcome.params)
    if "due_at" in params:
        params["date"] = format_date(params.pop("due_at"), format="long")
    return gettext(outcome.key, **params)


def is_htmx() -> bool:
    return bool(getattr(request, "htmx", False))  # set by htmx-flask from HX-Request


def respond(view: View, status: int = 200) -> Response:
    ctx: dict[str, Any] = {"v": view, "user": view.user}
    if is_htmx() and view.section:
        body = render_template(f"profile/_{view.section}.html", **ctx)
        for name in view.oob:
            body += render_template(f"profile/_{name}.html", oob=True, **ctx)
    else:
        body = render_template("profile/page.html", **ctx)
    resp = make_response(body, status)
    resp.vary.add("HX-Request")
    return resp


def outcome_response(
    section: str, outcome: Outcome, oob: tuple[str, ...] = (), keep: dict[str, str] | None = None
) -> Response:
    user = _me()
    if outcome.ok:
        return respond(
            View(
                user,
                section,
                {"kind": "success", "text": _text(outcome)},
                oob=oob if outcome.ok else (),
            )
        )
    errors = {outcome.field: True} if outcome.field else {}
    return respond(
        View(user, section, {"kind": "error", "text": _text(outcome)}, errors, keep or {}),
        outcome.status or 422,
    )


def limited(section: str, keep: dict[str, str] | None = None) -> Response:
    return respond(
        View(
            _me(),
            section,
            {"kind": "error", "text": gettext("auth.errors.tooManyAttempts")},
            {},
            keep or {},
        ),
        429,
    )


def password_check_allowed() -> bool:
    return ratelimit.hit("password-check", current_user.id)


@bp.get("")
@login_required
def show() -> Response:
    view = View(_me())
    for key in get_flashed_messages():
        if key == "profile.account.languageSaved":
            view.section, view.banner = "account", {"kind": "success", "text": gettext(key)}
    return respond(view)


@bp.post("/password")
@login_required
def password() -> Response:
    f = request.form
    current, new, confirm = (
        f.get("current_password", ""),
        f.get("new_password", ""),
        f.get("confirm_password", ""),
    )
    if new != confirm:  # before anything else, as the screen promises
        return outcome_response(
            "password", Outcome.error("profile.password.mismatch", "confirm_password")
        )
    if not password_check_allowed():
        return limited("password")
    outcome = commands.change_password(current_user, current, new)
    if outcome.ok and outcome.session_token:
        refresh_session(_me())
    return outcome_response("password", outcome)


@bp.post("/email")
@login_required
def email() -> Response:
    f = request.form
    keep = {"new_email": f.get("new_email", "")}
    if not password_check_allowed():
        return limited("email", keep)
    outcome = commands.change_email(
        current_user, f.get("new_email", ""), f.get("current_password", "")
    )
    return outcome_response("email", outcome, oob=("email_status",), keep=keep)


@bp.post("/delete")
@login_required
def delete() -> Response:
    if not password_check_allowed():
        return limited("danger")
    outcome = commands.request_deletion(current_user, request.form.get("current_password", ""))
    if outcome.ok and outcome.session_token:
        refresh_session(_me())  # every other session ends; this one stays to cancel
    return outcome_response("danger", outcome)


@bp.post("/cancel-deletion")
@login_required
def cancel_deletion() -> Response:
    return outcome_response("danger", commands.cancel_deletion(current_user))


@bp.post("/resend-verification")
@login_required
def resend_verification() -> Response:
    outcome = commands.resend_verification(_me())
    if outcome.key.startswith("profile.account.resendLimit."):
        text = {"kind": "error", "text": _text(outcome)}
        return respond(View(_me(), "account", text), 429)
    return outcome_response("account", outcome)


@bp.post("/sessions")
@login_required
def sessions() -> Response:
    outcome = commands.revoke_other_sessions(current_user)
    if outcome.session_token:
        refresh_session(_me())
    return outcome_response("account", outcome)


@bp.post("/language")
@login_required
def language() -> Response:
    outcome = commands.change_language(current_user, request.form.get("language", ""))
    if not outcome.ok:
        return outcome_response("account", outcome)
    # The whole page changes language: htmx reloads it (the banner comes back
    # through a flash); without JavaScript the answer is the page itself.
    if is_htmx():
        flash("profile.account.languageSaved")
        resp = make_response("", 200)
        resp.headers["HX-Refresh"] = "true"
        resp.vary.add("HX-Request")
        return resp
    refresh_session(_me())  # the page renders in the new language
    refresh()
    return outcome_response("account", outcome)


@bp.after_request
def _no_store(resp: Response) -> Response:
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.errorhandler(Exception)
def _unexpected(exc: Exception) -> Response:
    log.exception("profile request failed", exc_info=exc)
    section = request.endpoint.rsplit(".", 1)[-1] if request.endpoint else ""
    section = {
        "delete": "danger",
        "cancel_deletion": "danger",
        "resend_verification": "account",
        "sessions": "account",
        "language": "account",
    }.get(section, section)
    try:
        user = _me()
    except Exception:
        return make_response(render_template("error.html", message=gettext(GENERIC)), 500)
    if section not in SECTIONS:
        section = "account"
    resp = respond(View(user, section, {"kind": "error", "text": gettext(GENERIC)}), 500)
    resp.headers["X-Section-Fragment"] = "1"  # static/app.js lets htmx swap this 500
    return resp


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
