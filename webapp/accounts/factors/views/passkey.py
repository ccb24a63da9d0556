"""Signing in with a passkey: "Sign in with a passkey" on /login (no address
typed: the authenticator offers the passkeys of this site) and
`/login/passkey-step`, the second step after the password with a passkey.
Each ceremony asks its options from `.../options` (JSON, for
static/passkeys.js) and posts the answer as a plain form; both end like every
sign-in (`second_step.complete`). Without JavaScript the pages say so.

Passkey autofill (WebAuthn conditional mediation) uses the same two
endpoints with `mediation=conditional`: the email field offers the passkeys,
and choosing one posts the same form.

Limits: a passwordless attempt counts against `login-ip` like a password's; a
wrong passkey at the second step against `second-factor`, like a wrong code."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    Response,
    flash,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_babel import gettext

from webapp.accounts import ratelimit, signins
from webapp.accounts.factors import challenges, passkey_commands, passkeys, second_step
from webapp.accounts.factors.forms import PasskeyForm
from webapp.accounts.factors.views import signin as signin_views
from webapp.accounts.forms import LoginForm
from webapp.accounts.session import safe_next
from webapp.metrics.instruments import SIGNINS
from webapp.ui import pages

log = logging.getLogger(__name__)
bp = Blueprint("passkeys", __name__)
pages.no_store(bp)

TOO_MANY = "auth.errors.tooManyAttempts"


def error_of(form: PasskeyForm, checked_error: str | None) -> str:
    """The message for a passkey answer that did not sign in."""
    if not form.credential.data:
        key, params = passkey_commands.unanswered(form.client_error.data)
        return gettext(key, **params)
    return gettext(checked_error or passkey_commands.FAILED)


def _options(body: str) -> Response:
    return Response(body, 200, mimetype="application/json")


def _refused(status: int) -> Response:
    return jsonify(error=status), status  # type: ignore[return-value]


def _autofill() -> bool:
    """Whether this is passkey autofill's request (static/passkeys.js sends
    `mediation=conditional`): its own challenge, and its options count against
    `passkey-autofill-ip` (every page load of /login asks for them), not
    against the sign-in attempts."""
    return request.form.get("mediation") == "conditional"


@bp.post("/login/passkey/options")
def signin_options() -> Response:
    limit = "passkey-autofill-ip" if _autofill() else "login-ip"
    if not ratelimit.hit(limit, ratelimit.client_ip()):
        return _refused(429)
    purpose = challenges.AUTOFILL if _autofill() else challenges.SIGN_IN
    return _options(passkey_commands.authentication_options(purpose))


def _login_page(status: int, message: str) -> Response:
    form = LoginForm()
    form.add_error(None, message)
    next_url = safe_next(request.args.get("next"))
    return make_response(render_template("accounts/login.html", form=form, next=next_url), status)


@bp.post("/login/passkey")
def signin() -> Response:
    """The passwordless sign-in: the passkey names its account."""
    form = PasskeyForm(request.form)
    if not ratelimit.hit("login-ip", ratelimit.client_ip()):
        SIGNINS.labels("rate_limited").inc()
        return _login_page(429, gettext(TOO_MANY))
    purpose = challenges.AUTOFILL if _autofill() else challenges.SIGN_IN
    checked = passkey_commands.check(purpose, form.credential.data or "")
    if checked.user is None:
        SIGNINS.labels("refused").inc()
        return _login_page(422, error_of(form, checked.error))
    refused = signins.refusal(checked.user)
    if refused:
        SIGNINS.labels("refused").inc()
        return _login_page(403, gettext(refused.key))
    return second_step.complete(checked.user, False, safe_next(request.args.get("next")))


def _step_page(status: int, form: PasskeyForm, p: second_step.Pending) -> Response:
    return signin_views.page("accounts/login_passkey.html", status, "passkey", p.user, form=form)


@bp.post("/login/passkey-step/options")
def second_step_options() -> Response:
    p = second_step.pending()
    if p is None:
        return _refused(401)
    if not ratelimit.allowed(signin_views.LIMIT, p.user.id):
        return _refused(429)
    return _options(passkey_commands.authentication_options(challenges.SECOND_STEP, p.user))


@bp.route("/login/passkey-step", methods=["GET", "POST"], endpoint="second_step")
def second_step_page() -> Response:
    p = second_step.pending()
    if p is None:
        if second_step.expired():
            flash(signin_views.EXPIRED)
        return redirect(url_for("accounts.login"))  # type: ignore[return-value]
    if request.method == "GET":
        return _step_page(200, PasskeyForm(), p)
    form = PasskeyForm(request.form)
    if not ratelimit.allowed(signin_views.LIMIT, p.user.id):
        SIGNINS.labels("rate_limited").inc()
        form.add_error(None, gettext(TOO_MANY))
        return _step_page(429, form, p)
    checked = passkey_commands.check(
        challenges.SECOND_STEP, form.credential.data or "", user=p.user
    )
    if checked.user is None:
        if form.credential.data:  # a cancelled prompt is no wrong answer
            ratelimit.count(signin_views.LIMIT, p.user.id)
        SIGNINS.labels("refused").inc()
        form.add_error(None, error_of(form, checked.error))
        return _step_page(422, form, p)
    return second_step.finish(p)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
    warn_if_unusable(app.config["APP_CONFIG"].base_url)


def warn_if_unusable(base_url: str) -> None:
    """At start-up: under a BASE_URL whose host is an IP address no browser
    lets anyone add or use a passkey (the page then says so, but only the
    operator can change it)."""
    if passkeys.RelyingParty.of(base_url).on_ip_address:
        port = urlsplit(base_url).port
        log.warning(
            "BASE_URL's host is an IP address: browsers refuse passkeys there, so none "
            "can be added or used. Set BASE_URL to the address people open, by its "
            "domain name (on this machine: http://localhost%s)",
            f":{port}" if port else "",
            extra={"base_url": base_url},
        )
