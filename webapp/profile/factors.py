"""The profile's *Two-step verification* section: set up the authenticator
app (QR code and the secret as text, confirmed by one code), its 10 recovery
codes (shown once, downloadable as `.txt`), *Generate new codes*, *Turn off*
(password and a code), and *Confirm it's you* when the proof of identity is
older than REAUTH_SECONDS (accounts/reauth.py). One URL per form, answered on
the profile `Screen` like every section; the rules are accounts/factors'."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import Blueprint, Response, g, make_response, request
from flask_babel import gettext
from flask_login import login_required

from webapp.accounts import ratelimit, reauth
from webapp.accounts.credentials import check_password
from webapp.accounts.factors import commands, recovery, totp
from webapp.accounts.factors.forms import (
    AddPasskeyForm,
    ConfirmSetupForm,
    FactorsForm,
    ReauthForm,
    TurnOffForm,
)
from webapp.accounts.factors.passkey_store import Passkey, passkeys_of
from webapp.accounts.result import INVALID_CREDENTIALS, Result
from webapp.accounts.session import signed_in_user
from webapp.accounts.users import User
from webapp.core import db
from webapp.ui import sections
from webapp.ui.forms import Form
from webapp.ui.sections import Screen

SECTION = "factors"
LIMIT = "second-factor"  # failed codes per account (accounts/ratelimit.py)
STALE = "factors.reauth.stale"
# endpoint -> section, for the profile's unexpected-error answer
ENDPOINTS = {
    name: SECTION
    for name in (
        *("factors_confirm", "totp_start", "totp_confirm", "totp_off", "new_codes"),
        *("passkey_add", "passkey_remove", "passkey_confirm"),
    )
}


@dataclass(frozen=True)
class Setup:
    secret: str  # grouped in fours, as typed
    qr: str  # data: URI of the SVG


@dataclass(frozen=True)
class State:
    """What the section shows, from the account's row (the page renders from
    the row alone) and, in the answers that need them, the set-up in
    progress and the codes just made."""

    on: bool  # the authenticator app is on
    since: datetime | None
    codes_left: int
    passkeys: list[Passkey]
    fresh: bool
    setup: Setup | None  # a set-up in progress (only in the answers of the set-up)
    codes: list[str] | None  # codes just made: shown once, never again
    reauth: Form
    confirm: Form
    turn_off: Form
    add_passkey: Form

    @property
    def has_codes(self) -> bool:
        """Recovery codes come with the first second factor, the app or a
        passkey, and stay while any factor does: shown for either."""
        return self.on or bool(self.passkeys) or self.codes_left > 0


def blank() -> Form:
    return FactorsForm()


def state(user: User, form: Form | None) -> State:
    setup = None
    if g.get("factors_setup"):
        with db.reading() as conn:
            secret = commands.setup_secret(conn, user)
        if secret:
            setup = Setup(totp.grouped(secret), commands.setup_qr(user, secret))
    codes = g.get("factors_codes")
    keys: list[Passkey] = []
    if user.passkeys:  # the row says whether there is a list to read
        with db.reading() as conn:
            keys = passkeys_of(conn, user)

    def answered(kind: type[Form]) -> Form:
        return form if isinstance(form, kind) else kind()

    return State(
        user.totp_since is not None,
        user.totp_since,
        user.recovery_codes_left,
        keys,
        reauth.is_fresh(),
        setup,
        [recovery.shown(c) for c in codes] if codes else None,
        answered(ReauthForm),
        answered(ConfirmSetupForm),
        answered(TurnOffForm),
        answered(AddPasskeyForm),
    )


def answer(
    screen: Screen,
    status: int,
    form: Form | None = None,
    success: str | None = None,
    section: str = SECTION,
) -> Response:
    user = sections.reread()
    return screen.respond(screen.view(user, section, form, success), status)


def stale(screen: Screen) -> Response:
    """The proof is too old for this action: the section asks for it (403)."""
    form = ReauthForm()
    form.add_error(None, gettext(STALE))
    return answer(screen, 403, form)


def limited(screen: Screen, form: Form, section: str = SECTION) -> Response:
    form.add_error(None, gettext("auth.errors.tooManyAttempts"))
    return answer(screen, 429, form, section=section)


def confirm_identity(
    screen: Screen, section: str = SECTION, kind: type[ReauthForm] = ReauthForm
) -> Response:
    """*Confirm it's you*: the password (limited like every password check) or
    a code from the app (limited like every code). Answered on `section`
    (the connected accounts ask for it too)."""
    me = signed_in_user()
    form = kind(request.form)
    if not form.validate():
        return answer(screen, 422, form, section=section)
    if form.password.data:
        checked = sections.password_checked(
            lambda: (
                Result(True, "")
                if check_password(me, form.password.data)
                else Result.error(INVALID_CREDENTIALS, "current_password")
            )
        )
        if checked is None:
            return limited(screen, form, section)
        if not checked.ok:
            form.add_error("password", gettext(INVALID_CREDENTIALS))
            return answer(screen, 422, form, section=section)
    else:
        if not ratelimit.allowed(LIMIT, me.id):
            return limited(screen, form, section)
        if not commands.check_code(me, form.code.data):
            ratelimit.count(LIMIT, me.id)
            form.add_error("code", gettext(commands.WRONG_CODE))
            return answer(screen, 422, form, section=section)
    reauth.record_proof()
    return answer(screen, 200, success=gettext("factors.reauth.done"), section=section)


def start(screen: Screen) -> Response:
    if not reauth.is_fresh():
        return stale(screen)
    result = commands.begin_setup(signed_in_user())
    if result.ok:
        g.factors_setup = True
        return answer(screen, 200)
    return sections.result_response(screen, SECTION, result)


def confirm(screen: Screen) -> Response:
    me = signed_in_user()
    if not reauth.is_fresh():
        return stale(screen)
    form = ConfirmSetupForm(request.form)
    g.factors_setup = True  # on an error the set-up shows again
    if not form.validate():
        return answer(screen, 422, form)
    if not ratelimit.allowed(LIMIT, me.id):
        return limited(screen, form)
    result = commands.confirm_setup(me, form.code.data)
    if result.ok:
        g.factors_setup = False
        g.factors_codes = result.params["codes"]
        reauth.record_proof()  # a code from the app, just given
        return answer(screen, 200, success=gettext(result.key))
    if result.key == commands.WRONG_CODE:
        ratelimit.count(LIMIT, me.id)
    return sections.result_response(screen, SECTION, result, form)


def turn_off(screen: Screen) -> Response:
    """Needs the password and a code (a recovery code too), not a fresh proof:
    the form asks for both itself."""
    me = signed_in_user()
    form = TurnOffForm(request.form)
    if not form.validate():
        return sections.rejected(screen, SECTION, form)
    if not ratelimit.allowed(LIMIT, me.id):
        return limited(screen, form)
    result = sections.password_checked(
        lambda: commands.turn_off(me, form.current_password.data, form.code.data)
    )
    if result is None:
        return limited(screen, form)
    if result.key == commands.WRONG_CODE:
        ratelimit.count(LIMIT, me.id)
    if result.ok:
        reauth.record_proof()
    return sections.result_response(screen, SECTION, result, form)


def new_codes(screen: Screen) -> Response:
    if not reauth.is_fresh():
        return stale(screen)
    result = commands.new_codes(signed_in_user())
    if result.ok:
        g.factors_codes = result.params["codes"]
        return answer(screen, 200, success=gettext(result.key))
    return sections.result_response(screen, SECTION, result)


def download_codes() -> Response:
    """The codes just shown, as `recovery-codes.txt`: the page posts them back
    (they are stored only hashed, so the server cannot make them again)."""
    raw = request.form.getlist("code")
    codes = [recovery.normalized(c) for c in raw[: recovery.COUNT + 1]]
    if len(codes) != recovery.COUNT or any(c is None for c in codes):
        resp = make_response(gettext("factors.codes.downloadInvalid"), 422)
        resp.mimetype = "text/plain"
        return resp
    text = recovery.text_file([c for c in codes if c], gettext("factors.codes.fileHeading"))
    resp = make_response(text, 200)
    resp.mimetype = "text/plain"
    resp.headers["Content-Disposition"] = 'attachment; filename="recovery-codes.txt"'
    return resp


def add_routes(bp: Blueprint, screen: Screen) -> None:
    """The section's forms under `<bp>/factors/...`, signed in, answered on `screen`."""
    routes = {
        "/factors/confirm-identity": ("factors_confirm", confirm_identity),
        "/factors/totp/start": ("totp_start", start),
        "/factors/totp/confirm": ("totp_confirm", confirm),
        "/factors/totp/off": ("totp_off", turn_off),
        "/factors/recovery-codes": ("new_codes", new_codes),
    }
    for path, (endpoint, view) in routes.items():
        bp.add_url_rule(
            path,
            endpoint,
            login_required(lambda view=view: view(screen)),
            methods=["POST"],
        )
    bp.add_url_rule(
        "/factors/recovery-codes.txt",
        "download_codes",
        login_required(download_codes),
        methods=["POST"],
    )
