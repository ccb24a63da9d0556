"""`/login/code` and `/login/recovery`: the sign-in's second step, plain
pages that work without JavaScript. Each offers the other ways this account
has (`other_ways`; the passkey's page is passkey_views.py).
Wrong codes count against `second-factor` (5 per 5 minutes per account; then
429, whatever is typed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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

from webapp.accounts import ratelimit
from webapp.accounts.factors import commands, second_step
from webapp.accounts.factors.forms import SignInCodeForm, SignInRecoveryForm
from webapp.accounts.factors.tables import PASSKEY, TOTP
from webapp.accounts.users import User
from webapp.metrics.instruments import SIGNINS
from webapp.ui import pages
from webapp.ui.forms import Form

bp = Blueprint("factors", __name__)
pages.no_store(bp)

LIMIT = "second-factor"
EXPIRED = "factors.signin.expired"


@dataclass(frozen=True)
class Way:
    """Another way to give the second factor, offered below the form."""

    endpoint: str
    label: str  # i18n key
    testid: str
    needs: str | None  # the factor kind the account must have; None: any factor


WAYS = {
    "code": Way("factors.code", "factors.signin.useApp", "use-app", TOTP),
    "passkey": Way("passkeys.second_step", "factors.signin.usePasskey", "use-passkey", PASSKEY),
    "recovery": Way("factors.recovery", "factors.signin.useRecovery", "use-recovery", None),
}


def other_ways(current: str, kinds: set[str]) -> list[Way]:
    """The ways offered besides `current`, for an account with factors of
    `kinds`: the app's code only with the app, a passkey only with one, and
    recovery codes with any factor (they exist while one does)."""
    return [
        way
        for name, way in WAYS.items()
        if name != current and (way.needs is None or way.needs in kinds)
    ]


def page(template: str, status: int, current: str, user: User, **ctx: object) -> Response:
    """A second step's page, with the other ways this account has."""
    ways = other_ways(current, second_step.kinds(user))
    return make_response(render_template(template, ways=ways, **ctx), status)


def _page(template: str, form: Form, status: int, current: str, user: User) -> Response:
    return page(template, status, current, user, form=form)


def _step(
    template: str,
    current: str,
    make_form: Callable[..., Form],
    check: Callable[[second_step.Pending, Form], bool],
    wrong: str,
) -> Response:
    p = second_step.pending()
    if p is None:
        if second_step.expired():
            flash(EXPIRED)
        return redirect(url_for("accounts.login"))  # type: ignore[return-value]
    if request.method == "GET":
        return _page(template, make_form(), 200, current, p.user)
    form = make_form(request.form)
    if not ratelimit.allowed(LIMIT, p.user.id):
        SIGNINS.labels("rate_limited").inc()
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return _page(template, form, 429, current, p.user)
    if not form.validate():
        return _page(template, form, 422, current, p.user)
    if not check(p, form):
        ratelimit.count(LIMIT, p.user.id)
        SIGNINS.labels("refused").inc()
        field = next(iter(form._fields))
        form.add_error(field, gettext(wrong))
        return _page(template, form, 422, current, p.user)
    return second_step.finish(p)


@bp.route("/login/code", methods=["GET", "POST"])
def code() -> Response:
    return _step(
        "accounts/login_code.html",
        "code",
        SignInCodeForm,
        lambda p, form: commands.check_code(p.user, form.code.data),  # type: ignore[attr-defined]
        commands.WRONG_CODE,
    )


@bp.route("/login/recovery", methods=["GET", "POST"])
def recovery() -> Response:
    return _step(
        "accounts/login_recovery.html",
        "recovery",
        SignInRecoveryForm,
        lambda p, form: commands.use_recovery_code(p.user, form.recovery_code.data),  # type: ignore[attr-defined]
        commands.WRONG_RECOVERY,
    )


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
