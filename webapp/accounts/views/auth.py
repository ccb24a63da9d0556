"""Sign-up, sign-in, sign-out, and the links from account mails."""

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
    url_for,
)
from flask_babel import gettext
from flask_login import current_user

from webapp.accounts import addresses, change_email, i18n, ratelimit, registration, signins
from webapp.accounts.factors import second_step
from webapp.accounts.forms import LoginForm, RegisterForm, ResetPasswordForm
from webapp.accounts.result import Result
from webapp.accounts.session import safe_next, sign_out
from webapp.metrics.instruments import SIGNINS
from webapp.ui import pages

bp = Blueprint("accounts", __name__)
pages.no_store(bp)


def page(template: str, code: int = 200, **ctx: object) -> Response:
    return make_response(render_template(template, **ctx), code)


def status(outcome: Result) -> int:
    return 200 if outcome.ok else outcome.status or 400


@bp.route("/register", methods=["GET", "POST"])
def register() -> Response:
    if request.method == "GET":
        return page("accounts/register.html", form=RegisterForm())
    form = RegisterForm(request.form)
    if not ratelimit.hit("register-ip", ratelimit.client_ip()):
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return page("accounts/register.html", 429, form=form)
    if not form.validate():  # every error of the submit at once, in field order
        return page("accounts/register.html", 422, form=form)
    outcome = registration.register(
        form.email.data, form.password.data, form.confirm.data, i18n.current_language()
    )
    if not outcome.ok:
        form.add_error(outcome.field, gettext(outcome.key, **outcome.params))
        return page("accounts/register.html", outcome.status or 422, form=form)
    return page("accounts/register_done.html", email=outcome.params["email"])


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response:
    next_url = safe_next(request.values.get("next"))
    if request.method == "GET":
        if current_user.is_authenticated:
            return redirect(next_url or url_for("profile.show"))  # type: ignore[return-value]
        return page("accounts/login.html", form=LoginForm(), next=next_url)
    form = LoginForm(request.form)
    if not form.validate():
        return page("accounts/login.html", 422, form=form, next=next_url)
    email = form.email.data
    account_key = addresses.normalize(email) or email.strip().lower()[:320]
    limited = not ratelimit.hit("login-ip", ratelimit.client_ip()) or not ratelimit.allowed(
        "login-account", account_key
    )
    if limited:
        SIGNINS.labels("rate_limited").inc()
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return page("accounts/login.html", 429, form=form, next=next_url)
    user = signins.authenticate(email, form.password.data)
    if user is None:
        SIGNINS.labels("refused").inc()
        ratelimit.hit("login-account", account_key)
        # Not one field's fault (and no hint which): a form-wide error.
        form.add_error(None, gettext("auth.login.failed"), link_to="email")
        return page("accounts/login.html", 422, form=form, next=next_url)
    refused = signins.refusal(user)  # only after the right password: it tells nobody else
    if refused:
        SIGNINS.labels("refused").inc()
        form.add_error(None, gettext(refused.key))
        return page("accounts/login.html", 403, form=form, next=next_url)
    if second_step.needed(user):  # the code or a passkey next (accounts/factors)
        return second_step.begin(user, bool(form.remember.data), next_url)
    return second_step.complete(user, bool(form.remember.data), next_url)


@bp.post("/logout")
def logout() -> Response:
    sign_out()
    flash("auth.logout.success")
    return redirect(url_for("accounts.login"))  # type: ignore[return-value]


@bp.get("/verify-email/<token>")
def verify_email_page(token: str) -> Response:
    # GET never changes anything (mail scanners prefetch links): it checks the
    # link and offers a button; the POST below spends it.
    outcome = registration.check_verification(token)
    return page("accounts/verify.html", 200 if outcome.ok else 400, token=token, outcome=outcome)


@bp.post("/verify-email/<token>")
def verify_email(token: str) -> Response:
    outcome = registration.verify_email(token)
    return page("accounts/verify.html", status(outcome), token=token, outcome=outcome, done=True)


@bp.get("/email-change/revert/<token>")
def revert_page(token: str) -> Response:
    outcome = change_email.check_revert(token)
    return page("accounts/revert.html", 200 if outcome.ok else 400, token=token, outcome=outcome)


@bp.post("/email-change/revert/<token>")
def revert(token: str) -> Response:
    signed_in = current_user.is_authenticated  # loaded before the revert ends the session
    outcome = change_email.revert_email_change(token)
    if outcome.ok and signed_in:
        sign_out()  # its sign-in row is gone already; drop the cookies too
    return page(
        "accounts/revert.html",
        status(outcome),
        token=token,
        outcome=outcome,
        done=True,
        reset_form=ResetPasswordForm(),  # the offer to set a new password
    )


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
