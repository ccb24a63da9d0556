"""Sign-in by emailed code: `/login/email-code` asks for a code by address,
`/login/email-code/enter` takes it (webapp/accounts/signin_codes.py). One URL
per form, two renderings: htmx gets the section, anything else the page.

Asking answers the same for every address (200, the code form: "If an account
exists for <address>, we have sent it a sign-in code"). Limits as for password
sign-ins: each request counts against `login-ip`; a wrong code counts against
`login-account` (the address typed), and while that is used up both forms
answer 429. At most `signin-code-account` codes are mailed per address; more
requests get the same answer and no mail. The right code ends like a password:
the second step when the account has a second factor, else signed in.
`SIGNIN_BY_CODE=false` turns it off: the link goes and both URLs answer 404."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, Response, abort, current_app, redirect, request, url_for
from flask_babel import gettext
from flask_login import current_user
from wtforms import BooleanField, StringField

from webapp.accounts import addresses, ratelimit, registration, signin_codes, signins
from webapp.accounts.factors import second_step
from webapp.accounts.forms import email_problem
from webapp.accounts.i18n import duration
from webapp.accounts.session import safe_next
from webapp.metrics.instruments import SIGNINS
from webapp.ui import forms as forms_core
from webapp.ui import pages
from webapp.ui.forms import Form, check, required

bp = Blueprint("signin_code", __name__)
pages.no_store(bp)

TOO_MANY = "auth.errors.tooManyAttempts"
MAILS = "signin-code-account"


def _code_problem(value: str) -> str | None:
    return None if signin_codes.normalized(value) else gettext("signinCode.errors.codeFormat")


class CodeRequestForm(Form):
    id_prefix = "email-code"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])


class CodeForm(Form):
    id_prefix = "email-code"
    code = StringField(
        validators=[required("signinCode.errors.codeRequired"), check(_code_problem)]
    )
    remember = BooleanField()


def enabled() -> bool:
    return bool(current_app.config["APP_CONFIG"].signin_by_code)


@bp.before_request
def _only_when_enabled() -> None:
    if not enabled():
        abort(404)


def _sent_text(email: str) -> str:
    return gettext("signinCode.sent", email=email, duration=duration(signin_codes.LIFETIME))


def _render(status: int = 200, success: str | None = None, **ctx: Any) -> Response:
    form = ctx.get("form") or ctx.get("code_form")
    has_errors = isinstance(form, Form) and form.has_errors
    return pages.render(
        "accounts/email_code.html",
        "accounts/_email_code.html",
        success=success,
        has_errors=has_errors,
        status=status,
        **ctx,
    )


def _code_page(
    status: int, form: CodeForm, p: signin_codes.Pending, sent: bool = False
) -> Response:
    text = _sent_text(p.email)
    return _render(
        status, text if sent else None, code_form=form, sent_text=text, sent=sent, next=p.next_url
    )


def _account_key(email: str) -> str:
    return addresses.normalize(email) or email.strip().lower()[:320]


def _limited(account_key: str) -> bool:
    """Counts this request against the client's limit; True when it, or the
    address's failed sign-ins, are used up."""
    return not ratelimit.hit("login-ip", ratelimit.client_ip()) or not ratelimit.allowed(
        "login-account", account_key
    )


@bp.route("/login/email-code", methods=["GET", "POST"])
def request_code() -> Response:
    next_url = safe_next(request.values.get("next"))
    if request.method == "GET":
        if current_user.is_authenticated:
            return redirect(next_url or url_for("profile.show"))  # type: ignore[return-value]
        return _render(form=CodeRequestForm(), next=next_url)
    form = CodeRequestForm(request.form)
    if not form.validate():
        return _render(422, form=form, next=next_url)
    key = _account_key(form.email.data)
    if _limited(key):
        SIGNINS.labels("rate_limited").inc()
        form.add_error(None, gettext(TOO_MANY))
        return _render(429, form=form, next=next_url)
    if ratelimit.hit(MAILS, key):
        signin_codes.issue(form.email.data, next_url)
    else:  # enough codes went to this address lately: the same answer, no mail
        signin_codes.keep(form.email.data, next_url)
    p = signin_codes.pending()
    assert p is not None
    return _code_page(200, CodeForm(), p, sent=True)


@bp.route("/login/email-code/enter", methods=["GET", "POST"])
def enter() -> Response:
    p = signin_codes.pending()
    if p is None:
        return redirect(url_for("signin_code.request_code"))  # type: ignore[return-value]
    if request.method == "GET":
        return _code_page(200, CodeForm(), p)
    form = CodeForm(request.form)
    if _limited(p.email):
        SIGNINS.labels("rate_limited").inc()
        form.add_error(None, gettext(TOO_MANY))
        return _code_page(429, form, p)
    if not form.validate():
        return _code_page(422, form, p)
    checked = signin_codes.check(form.code.data)
    user = checked.user
    if user is None:
        ratelimit.hit("login-account", p.email)
        SIGNINS.labels("refused").inc()
        if checked.error == signin_codes.EXPIRED:
            form.add_error(None, gettext(signin_codes.EXPIRED))
        else:
            form.add_error("code", gettext(signin_codes.WRONG))
        return _code_page(422, form, p)
    refused = signins.refusal(user)
    if refused:
        SIGNINS.labels("refused").inc()
        form.add_error(None, gettext(refused.key))
        return _code_page(403, form, p)
    registration.verified_by_code(user, p.email)  # the code reached the address
    signin_codes.forget()
    remember = bool(form.remember.data)
    if second_step.needed(user):  # the code stands in for the password, not the second factor
        resp = second_step.begin(user, remember, p.next_url)
    else:
        resp = second_step.complete(user, remember, p.next_url)
    if forms_core.is_fragment():
        return pages.htmx_redirect(resp.location or url_for("profile.show"))
    return resp


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
