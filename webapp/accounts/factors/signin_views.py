"""`/login/code` and `/login/recovery`: the sign-in's second step, plain
pages that work without JavaScript. Each offers the other ways this account
has (`other_ways`: where "Use a passkey instead" joins when passkeys exist).
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

from webapp import pages
from webapp.accounts import ratelimit
from webapp.accounts.factors import commands, second_step
from webapp.accounts.factors.forms import SignInCodeForm, SignInRecoveryForm
from webapp.forms import Form
from webapp.metrics.instruments import SIGNINS

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


WAYS = {
    "code": Way("factors.code", "factors.signin.useApp", "use-app"),
    "recovery": Way("factors.recovery", "factors.signin.useRecovery", "use-recovery"),
}


def other_ways(current: str) -> list[Way]:
    """The ways offered besides `current`: each needs nothing but a factor of
    the account, so every one is there (a passkey would be offered only to an
    account that has one)."""
    return [way for name, way in WAYS.items() if name != current]


def _page(template: str, form: Form, status: int, current: str) -> Response:
    body = render_template(template, form=form, ways=other_ways(current))
    return make_response(body, status)


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
        return _page(template, make_form(), 200, current)
    form = make_form(request.form)
    if not ratelimit.allowed(LIMIT, p.user.id):
        SIGNINS.labels("rate_limited").inc()
        form.add_error(None, gettext("auth.errors.tooManyAttempts"))
        return _page(template, form, 429, current)
    if not form.validate():
        return _page(template, form, 422, current)
    if not check(p, form):
        ratelimit.count(LIMIT, p.user.id)
        SIGNINS.labels("refused").inc()
        field = next(iter(form._fields))
        form.add_error(field, gettext(wrong))
        return _page(template, form, 422, current)
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
