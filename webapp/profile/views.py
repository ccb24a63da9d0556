"""The profile screen: one page, four sections, each its own form.

One URL per command, two renderings: an htmx request gets the section fragment
(plus out-of-band fragments and the live region's message), anything else the
whole page with the section's errors or success shown. `respond()` names the
profile's templates; webapp/pages.py is the one place that decides (every screen). Each section's form (webapp/profile/forms.py) reports every
error of a submit at once (docs/accounts.md, "Forms and accessibility").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    flash,
    get_flashed_messages,
    make_response,
    render_template,
    request,
    session,
)
from flask_babel import format_date, get_locale, gettext, refresh
from flask_login import current_user, login_required
from markupsafe import Markup

from webapp import db, pages, security
from webapp import forms as forms_core
from webapp.accounts import profile_commands as commands
from webapp.accounts import ratelimit, users
from webapp.accounts.commands import GENERIC, INVALID_CREDENTIALS, Outcome, check_password
from webapp.accounts.session import refresh_session, signed_in_user
from webapp.accounts.users import User
from webapp.forms import Form
from webapp.profile import forms
from webapp.render_cache import RenderCache

log = logging.getLogger(__name__)
bp = Blueprint("profile", __name__, url_prefix="/profile")

SECTIONS = ("account", "password", "email", "danger")


@dataclass
class View:
    """What a render of the page or of one section needs."""

    user: User
    section: str | None = None
    form: Form | None = None  # the answered section's form: what was typed, what is wrong
    success: str | None = None  # the answered section's success message
    oob: tuple[str, ...] = ()
    # The empty form of a section that was not submitted (the screen's own).
    blank: Callable[[str, bool], Form] = forms.blank

    def form_for(self, section: str) -> Form:
        if section == self.section and self.form is not None:
            return self.form
        return self.blank(section, self.user.deletion_requested)

    def success_for(self, section: str) -> str | None:
        return self.success if section == self.section else None


def reread() -> User:
    """The user's row read again, after this request changed it (the session's
    copy, `signed_in_user()`, was loaded before the change)."""
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


def respond(view: View, status: int = 200) -> Response:
    """The profile's page or one section of it (webapp/pages.py decides which)."""
    return pages.render(
        "profile/page.html",
        f"profile/_{view.section}.html" if view.section else None,
        oob=[f"profile/_{name}.html" for name in view.oob],
        success=view.success,
        has_errors=forms_core.has_errors(view.form),
        status=status,
        v=view,
        user=view.user,
    )


# The page as a plain GET shows it (nothing submitted, no banner): one
# rendering per browser session, at most this many per app (about 8 KB each).
KEPT_PAGES = 1000


def blank_page(view: View) -> Response:
    """`respond(view)` for a plain GET, kept per browser session and rendered
    again as soon as anything it shows may differ: the account's version (every
    event of the account moves it), the language, or the kind of request (htmx:
    no autofocus). The browser session is its CSRF secret, which the page's
    tokens are signed from; before it has one, the render makes it. The page
    (nav included) may show only what the account's row, the app's config and
    the language determine; anything else goes into the key."""
    csrf_secret = session.get(current_app.config["WTF_CSRF_FIELD_NAME"])
    if not csrf_secret:
        return respond(view)
    user = view.user
    owner = (user.tenant_id, user.id, csrf_secret, forms_core.is_fragment())
    version = (user.version, str(get_locale()))
    kept: RenderCache = current_app.extensions["profile.blank_pages"]
    html = kept.get_or_render(owner, version, lambda: Markup(respond(view).get_data(as_text=True)))
    resp = make_response(str(html), 200)
    resp.vary.add("HX-Request")  # as pages.render answers
    return resp


@dataclass(frozen=True)
class Screen:
    """A screen made of sections (the profile, the privacy center): how it
    answers, and its sections' empty forms. The danger zone runs on either."""

    respond: Callable[[View, int], Response]
    blank: Callable[[str, bool], Form] = forms.blank

    def view(self, user: User, section: str | None, form: Form | None = None, **kw: object) -> View:
        return View(user, section, form, blank=self.blank, **kw)  # type: ignore[arg-type]


PROFILE = Screen(lambda view, status: respond(view, status))


def outcome_response(
    section: str,
    outcome: Outcome,
    form: Form | None = None,
    oob: tuple[str, ...] = (),
    screen: Screen = PROFILE,
) -> Response:
    user = reread()
    if outcome.ok:  # the section comes back empty, with its message
        return screen.respond(screen.view(user, section, success=_text(outcome), oob=oob), 200)
    form = form or screen.blank(section, user.deletion_requested)
    form.add_error(outcome.field, _text(outcome))
    return screen.respond(screen.view(user, section, form), outcome.status or 422)


def limited(section: str, form: Form, screen: Screen = PROFILE) -> Response:
    form.add_error(None, gettext("auth.errors.tooManyAttempts"))
    return screen.respond(screen.view(signed_in_user(), section, form), 429)


def password_check_allowed() -> bool:
    return ratelimit.hit("password-check", current_user.id)


def rejected(section: str, form: Form, screen: Screen = PROFILE) -> Response:
    """422 with every error of the submit at once. A current password that was
    given is checked too (rate limited like any check), so its error comes with
    the others instead of after the next submit."""
    current = form["current_password"]
    if current.data and not current.errors:
        if not password_check_allowed():
            return limited(section, form, screen)
        if not check_password(signed_in_user(), current.data):
            form.add_error("current_password", gettext(INVALID_CREDENTIALS))
    return screen.respond(screen.view(signed_in_user(), section, form), 422)


def request_deletion(screen: Screen) -> Response:
    """The danger zone's *Delete account*, answered on `screen` (profile or privacy)."""
    if signed_in_user().deletion_requested:  # a second tab: the section now offers Cancel
        return outcome_response(
            "danger", Outcome.error("profile.danger.alreadyRequested"), screen=screen
        )
    form = forms.DeleteForm(request.form)
    if not form.validate():
        return rejected("danger", form, screen)
    if not password_check_allowed():
        return limited("danger", form, screen)
    outcome = commands.request_deletion(current_user, form.current_password.data)
    if outcome.ok and outcome.session_token:
        refresh_session(reread())  # every other session ends; this one stays to cancel
    return outcome_response("danger", outcome, form, screen=screen)


def cancel_deletion_on(screen: Screen) -> Response:
    """The danger zone's *Cancel deletion*, answered on `screen`."""
    return outcome_response("danger", commands.cancel_deletion(current_user), screen=screen)


@bp.get("")
@login_required
def show() -> Response:
    view = View(signed_in_user())  # loaded once, by the session check
    for key in get_flashed_messages():
        if key == "profile.account.languageSaved":
            view.section, view.success = "account", gettext(key)
    return respond(view) if view.success else blank_page(view)


@bp.post("/password")
@login_required
def password() -> Response:
    form = forms.PasswordForm(request.form, account_email=current_user.email)
    if not form.validate():
        return rejected("password", form)
    if not password_check_allowed():
        return limited("password", form)
    outcome = commands.change_password(
        current_user, form.current_password.data, form.new_password.data
    )
    if outcome.ok and outcome.session_token:
        refresh_session(reread())
    return outcome_response("password", outcome, form)


@bp.post("/email")
@login_required
def email() -> Response:
    form = forms.EmailForm(request.form, account_email=current_user.email)
    if not form.validate():
        return rejected("email", form)
    if not password_check_allowed():
        return limited("email", form)
    outcome = commands.change_email(current_user, form.new_email.data, form.current_password.data)
    return outcome_response("email", outcome, form, oob=("email_status",))


@bp.post("/delete")
@login_required
def delete() -> Response:
    return request_deletion(PROFILE)


@bp.post("/cancel-deletion")
@login_required
def cancel_deletion() -> Response:
    return cancel_deletion_on(PROFILE)


@bp.post("/resend-verification")
@login_required
def resend_verification() -> Response:
    me = signed_in_user()
    outcome = commands.resend_verification(me)
    if outcome.key.startswith("profile.account.resendLimit."):
        form = forms.blank("account", me.deletion_requested)
        form.add_error(None, _text(outcome))
        return respond(View(me, "account", form), 429)
    return outcome_response("account", outcome)


@bp.post("/sessions")
@login_required
def sessions() -> Response:
    outcome = commands.revoke_other_sessions(current_user)
    if outcome.session_token:
        refresh_session(reread())
    return outcome_response("account", outcome)


@bp.post("/language")
@login_required
def language() -> Response:
    form = forms.AccountForm(request.form)
    outcome = commands.change_language(current_user, form.language.data or "")
    if not outcome.ok:
        return outcome_response("account", outcome, form)
    # The whole page changes language: htmx reloads it (the banner comes back
    # through a flash); without JavaScript the answer is the page itself.
    if forms_core.is_fragment():
        flash("profile.account.languageSaved")
        resp = make_response("", 200)
        resp.headers["HX-Refresh"] = "true"
        resp.vary.add("HX-Request")
        return resp
    refresh_session(reread())  # the page renders in the new language
    refresh()
    return outcome_response("account", outcome)


@bp.after_request
def _no_store(resp: Response) -> Response:
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.errorhandler(Exception)
def _unexpected(exc: Exception) -> Response:
    if isinstance(exc, security.DATABASE_UNAVAILABLE):
        return security.unavailable(exc)
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
        user = reread()
    except Exception:
        return make_response(render_template("error.html", message=gettext(GENERIC)), 500)
    if section not in SECTIONS:
        section = "account"
    form = forms.blank(section, user.deletion_requested)
    form.add_error(None, gettext(GENERIC))
    resp = respond(View(user, section, form), 500)
    resp.headers["X-Section-Fragment"] = "1"  # static/app.js lets htmx swap this 500
    return resp


def init_app(app: Flask) -> None:
    app.extensions["profile.blank_pages"] = RenderCache(size=KEPT_PAGES)
    app.register_blueprint(bp)
