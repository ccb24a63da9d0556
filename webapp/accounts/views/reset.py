""" "Forgot password?": `/reset-password` asks for a link, `/reset-password/<token>`
sets the new password. One URL per form, two renderings: an htmx request gets
the section (plus the live region's message), anything else the whole page (no
JavaScript needed). Both forms follow the one error pattern (webapp/ui/forms.py):
every error of a submit at once, 422; rate limits 429."""

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

from webapp.accounts import addresses, ratelimit, reset
from webapp.accounts.forms import ResetPasswordForm, ResetRequestForm
from webapp.accounts.result import Result
from webapp.ui import forms as forms_core
from webapp.ui import pages

bp = Blueprint("reset", __name__)
pages.no_store(bp, no_referrer=True)  # the token is in the URL


def _render(name: str, code: int = 200, success: str | None = None, **ctx: object) -> Response:
    """The section for htmx (with `success` for the page's live region), else the
    page (its title starts with "Error: " when the form shows errors)."""
    htmx = forms_core.is_fragment()
    template = f"accounts/_{name}.html" if htmx else f"accounts/{name}.html"
    body = render_template(template, success=success, **ctx)
    if htmx:
        body += forms_core.live_status(success)
    resp = make_response(body, code)
    resp.vary.add("HX-Request")
    return resp


def _text(outcome: Result) -> str:
    return gettext(outcome.key, **outcome.params)


@bp.route("/reset-password", methods=["GET", "POST"])
def request_link() -> Response:
    if request.method == "GET":
        return _render("reset_request", form=ResetRequestForm())
    form = ResetRequestForm(request.form)
    if not ratelimit.hit("reset-ip", ratelimit.client_ip()):
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return _render("reset_request", 429, form=form)
    if not form.validate():
        return _render("reset_request", 422, form=form)
    sent = _text(Result(True, reset.SENT))
    address = addresses.normalize(form.email.data)
    if address is not None and not ratelimit.hit("reset-account", address):
        # Enough links went to this address lately: the same answer, no mail.
        return _render("reset_request", form=ResetRequestForm(), success=sent)
    outcome = reset.request_reset(form.email.data)
    if not outcome.ok:
        form.add_error(outcome.field, _text(outcome))
        return _render("reset_request", 422, form=form)
    return _render("reset_request", form=ResetRequestForm(), success=sent)


def _invalid(token: str, outcome: Result) -> Response:
    """The link cannot be used (unknown, spent, expired): no form, a way to ask anew."""
    status = {"kind": "error", "text": _text(outcome)}
    resp = _render("reset_password", 400, token=token, status=status, invalid=True)
    if forms_core.is_fragment() and request.method == "POST":
        # htmx does not swap a 400; a page load of the link shows why instead of a
        # button that seems to do nothing (the link expired while the user typed).
        resp.headers["HX-Redirect"] = url_for("reset.set_password", token=token)
    return resp


@bp.route("/reset-password/<token>", methods=["GET", "POST"])
def set_password(token: str) -> Response:
    checked = reset.check_reset(token)
    if not checked.ok:
        return _invalid(token, checked)
    if request.method == "GET":
        return _render("reset_password", token=token, form=ResetPasswordForm())
    form = ResetPasswordForm(request.form, account_email=checked.params["email"])
    if not form.validate():  # every error of the submit at once, in field order
        return _render("reset_password", 422, token=token, form=form)
    outcome = reset.reset_password(token, form.new_password.data, form.confirm_password.data)
    if not outcome.ok:
        if outcome.key == reset.INVALID:  # spent or expired since the check above
            return _invalid(token, outcome)
        form.add_error(outcome.field, _text(outcome))
        return _render("reset_password", outcome.status or 422, token=token, form=form)
    # Every session has ended with the reset, this one too.
    if current_user.is_authenticated:
        logout_user()
    session.clear()
    flash(outcome.key)
    target = url_for("accounts.login")
    if forms_core.is_fragment():
        return pages.htmx_redirect(target)
    return redirect(target, 303)  # type: ignore[return-value]


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
