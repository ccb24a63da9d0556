"""The sign-in page's "Continue with <Label>" (POST /login/with/<name>), the
provider's answer (GET /login/with/<name>/callback), and the pages it may
lead to: an account exists for that address (sign in to it, then link), an
address to confirm (no verified one from the provider), check your mail.
Every failure goes back to the sign-in page with a message and signs
nobody in. Linking from the profile starts here too (webapp/profile/
connected.py) and comes back to the profile."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

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
from flask_login import current_user
from wtforms import StringField

from webapp.accounts import addresses, i18n, ratelimit, reauth
from webapp.accounts.factors import second_step
from webapp.accounts.forms import email_problem
from webapp.accounts.identities import commands, flow, protocol
from webapp.accounts.identities.protocol import Claims, ProviderError
from webapp.accounts.session import safe_next, signed_in_user
from webapp.core import clock, security
from webapp.core.identity_providers import GITHUB, ProviderSettings
from webapp.metrics.instruments import SIGNINS
from webapp.ui import pages
from webapp.ui.forms import Form, check, required

log = logging.getLogger(__name__)

bp = Blueprint("identities", __name__)
pages.no_store(bp)

ERROR_CATEGORY = "identity-error"  # flashed to the sign-in page: "<i18n key>|<label>"
PROFILE_CATEGORY = "identity-profile"  # flashed to the profile: "ok|<key>|<label>" or "error|..."
PENDING_KEY = "identity_signup"  # an identity waiting for an address to confirm
PENDING_SECONDS = 900


class AddressForm(Form):
    id_prefix = "identity-address"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])


def _to_login(p: ProviderSettings | None, key: str, next_url: str | None) -> Response:
    flash(f"{key}|{p.label if p else ''}", ERROR_CATEGORY)
    target = url_for("accounts.login", next=next_url) if next_url else url_for("accounts.login")
    return redirect(target)  # type: ignore[return-value]


def _to_profile(ok: bool, key: str, label: str) -> Response:
    flash(f"{'ok' if ok else 'error'}|{key}|{label}", PROFILE_CATEGORY)
    return redirect(url_for("profile.show") + "#profile-connected")  # type: ignore[return-value]


@bp.post("/login/with/<name>")
def start(name: str) -> Response:
    next_url = safe_next(request.values.get("next"))
    p = flow.provider(name)
    if p is None:
        return make_response(
            render_template("error.html", message=gettext("identities.errors.unknown")), 404
        )
    if not ratelimit.hit("login-ip", ratelimit.client_ip()):
        return _to_login(p, "auth.errors.tooManyAttempts", next_url)
    try:
        url = flow.begin(p, flow.SIGN_IN, next_url)
    except ProviderError as exc:
        log.warning("identity provider %s unavailable: %s", p.name, exc)
        return _to_login(p, exc.key, next_url)
    return redirect(url)  # type: ignore[return-value]


@bp.get("/login/with/<name>/callback")
def callback(name: str) -> Response:
    p = flow.provider(name)
    if p is None:
        return make_response(
            render_template("error.html", message=gettext("identities.errors.unknown")), 404
        )
    linking = flow.pending_purpose() in (flow.LINK, flow.REAUTH)
    args = {k: v for k, v in request.args.items() if len(v) <= 8192}
    try:
        answer = flow.finish(p, args)
    except ProviderError as exc:
        log.info("identity round trip refused (%s): %s", p.name, exc)
        SIGNINS.labels("refused").inc()
        if linking:
            return _to_profile(False, exc.key, p.label)
        return _to_login(p, exc.key, None)
    if answer.purpose == flow.LINK:
        return _link(p, answer)
    if answer.purpose == flow.REAUTH:
        return _confirm(p, answer)
    return _sign_in(p, answer.claims, answer.next_url)


def _link(p: ProviderSettings, answer: flow.Answer) -> Response:
    # Still signed in here, as the same person who asked (else: signed out meanwhile).
    if not current_user.is_authenticated or current_user.id != answer.user_id:
        return _to_login(p, "identities.errors.state", None)
    result = commands.link(signed_in_user(), p, answer.claims)
    return _to_profile(result.ok, result.key, p.label)


def _confirm(p: ProviderSettings, answer: flow.Answer) -> Response:
    """*Confirm it's you* by a provider: the identity must be one linked to
    the signed-in account (for accounts without a password, the only proof)."""
    if not current_user.is_authenticated or current_user.id != answer.user_id:
        return _to_login(p, "identities.errors.state", None)
    if not commands.is_linked(signed_in_user(), p, answer.claims):
        return _to_profile(False, "identities.errors.notYours", p.label)
    reauth.record_proof()
    return _to_profile(True, "factors.reauth.done", p.label)


def _sign_in(p: ProviderSettings, claims: Claims, next_url: str | None) -> Response:
    outcome = commands.sign_in(p, claims)
    if outcome.kind == commands.REFUSED:
        SIGNINS.labels("refused").inc()
        return _to_login(p, outcome.key or "auth.login.failed", next_url)
    if outcome.kind == commands.EXISTS:
        SIGNINS.labels("refused").inc()
        return _page(
            "accounts/identities/exists.html", 409, p=p, email=outcome.email, next=next_url
        )
    if outcome.kind == commands.UNVERIFIED:
        return _page("accounts/identities/check_mail.html", 200, p=p, email=outcome.email)
    if outcome.kind == commands.ASK_ADDRESS:
        session[PENDING_KEY] = {
            "p": p.name,
            "sub": claims.subject,
            "email": claims.email,
            "at": clock.now().timestamp(),
        }
        form = AddressForm(data={"email": outcome.email or ""})
        return _page("accounts/identities/address.html", 200, p=p, form=form)
    user = outcome.user
    assert user is not None
    if second_step.needed(user):  # the provider replaces the password, not the second step
        return second_step.begin(user, False, next_url)
    return second_step.complete(user, False, next_url)


def _page(template: str, status: int, **ctx: Any) -> Response:
    return make_response(render_template(template, **ctx), status)


@bp.post("/login/with/<name>/address")
def address(name: str) -> Response:
    """Sign-up without an address the provider verified: the person names one,
    and our verification mail confirms it before the account signs in."""
    p = flow.provider(name)
    info = session.get(PENDING_KEY)
    fresh = (
        isinstance(info, dict)
        and info.get("p") == name
        and 0 <= clock.now().timestamp() - float(info.get("at") or 0) <= PENDING_SECONDS
    )
    if p is None or not fresh:
        session.pop(PENDING_KEY, None)
        return _to_login(p, "identities.errors.expired", None)
    form = AddressForm(request.form)
    if not ratelimit.hit("register-ip", ratelimit.client_ip()):
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return _page("accounts/identities/address.html", 429, p=p, form=form)
    if not form.validate():
        return _page("accounts/identities/address.html", 422, p=p, form=form)
    email = addresses.normalize(form.email.data)
    assert email is not None and isinstance(info, dict)
    session.pop(PENDING_KEY, None)
    claims = Claims(str(info["sub"]), info.get("email"), False)
    outcome = commands.sign_up(p, claims, email, verified=False, language=i18n.current_language())
    if outcome.kind == commands.REFUSED:
        return _to_login(p, outcome.key or "identities.errors.retry", None)
    return _page("accounts/identities/check_mail.html", 200, p=p, email=email)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def form_action_origins(providers: tuple[ProviderSettings, ...]) -> tuple[str, ...]:
    """Where a "Continue with" or "Connect" form's answer may redirect the
    browser: each provider's origin (its authorization endpoint's too, once
    discovery named it). Browsers apply the page's `form-action` to the
    redirects after a form's submit, so without them the redirect is blocked."""
    found: list[str] = []
    for p in providers:
        urls = [p.web_url] if p.kind == GITHUB else [p.issuer, *protocol.known_endpoints(p)]
        found += [o for o in map(_origin, urls) if o not in found]
    return tuple(found)


@bp.after_app_request
def _allow_provider_redirects(resp: Response) -> Response:
    """The page's CSP (webapp/core/security.py's, which a view may set first)
    with the providers' origins in `form-action`."""
    providers = flow.providers()
    if providers and resp.mimetype == "text/html" and "Content-Security-Policy" not in resp.headers:
        origins = " ".join(form_action_origins(providers))
        resp.headers["Content-Security-Policy"] = security.CSP.replace(
            "form-action 'self'", f"form-action 'self' {origins}"
        )
    return resp


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
