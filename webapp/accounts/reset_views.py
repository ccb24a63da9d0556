""" "Forgot password?": `/reset-password` asks for a link, `/reset-password/<token>`
sets the new password. One URL per form, two renderings: an htmx request gets
the section, anything else the whole page (no JavaScript needed)."""

from __future__ import annotations

from flask import (
    Blueprint,
    Flask,
    Response,
    flash,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_babel import gettext
from flask_login import current_user, logout_user

from webapp.accounts import emails, ratelimit, reset
from webapp.accounts.commands import Outcome

bp = Blueprint("reset", __name__)


def _render(name: str, code: int = 200, **ctx: object) -> Response:
    htmx = bool(getattr(request, "htmx", False))
    template = f"accounts/_{name}.html" if htmx else f"accounts/{name}.html"
    resp = make_response(render_template(template, **ctx), code)
    resp.vary.add("HX-Request")
    return resp


def _banner(outcome: Outcome) -> dict[str, str]:
    kind = "success" if outcome.ok else "error"
    return {"kind": kind, "text": gettext(outcome.key, **outcome.params)}


@bp.route("/reset-password", methods=["GET", "POST"])
def request_link() -> Response:
    if request.method == "GET":
        return _render("reset_request")
    email = request.form.get("email", "")
    if not ratelimit.hit("reset-ip", ratelimit.client_ip()):
        status = {"kind": "error", "text": gettext("auth.errors.tooManyAttempts")}
        return _render("reset_request", 429, email=email, status=status)
    address = emails.normalize(email)
    if address is not None and not ratelimit.hit("reset-account", address):
        # Enough links went to this address lately: the same answer, no mail.
        return _render("reset_request", status=_banner(Outcome(True, reset.SENT)))
    outcome = reset.request_reset(email)
    if not outcome.ok:
        return _render(
            "reset_request", 422, email=email, status=_banner(outcome), error_field="email"
        )
    return _render("reset_request", status=_banner(outcome))


@bp.route("/reset-password/<token>", methods=["GET", "POST"])
def set_password(token: str) -> Response:
    if request.method == "GET":
        outcome = reset.check_reset(token)
        status = None if outcome.ok else _banner(outcome)
        return _render(
            "reset_password",
            200 if outcome.ok else 400,
            token=token,
            status=status,
            invalid=not outcome.ok,
        )
    form = request.form
    outcome = reset.reset_password(
        token, form.get("new_password", ""), form.get("confirm_password", "")
    )
    if not outcome.ok:
        invalid = outcome.key == reset.INVALID
        return _render(
            "reset_password",
            400 if invalid else 422,
            token=token,
            status=_banner(outcome),
            error_field=outcome.field,
            invalid=invalid,
        )
    # Every session has ended with the reset, this one too.
    if current_user.is_authenticated:
        logout_user()
    session.clear()
    flash(outcome.key)
    target = url_for("accounts.login")
    if getattr(request, "htmx", False):
        resp = make_response("", 200)
        resp.headers["HX-Redirect"] = target
        resp.vary.add("HX-Request")
        return resp
    return redirect(target, 303)  # type: ignore[return-value]


@bp.after_request
def _no_store(resp: Response) -> Response:
    resp.headers["Cache-Control"] = "no-store"
    resp.headers["Referrer-Policy"] = "no-referrer"  # the token is in the URL
    return resp


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
