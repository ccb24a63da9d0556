"""The profile screen: one page, five sections, each its own form(s).

One URL per command, two renderings: an htmx request gets the section fragment
(plus out-of-band fragments and the live region's message), anything else the
whole page with the section's errors or success shown. `respond()` names the
profile's templates; webapp/ui/pages.py is the one place that decides (every
screen), webapp/ui/sections.py holds what every screen of sections answers. Each
section's form (webapp/profile/forms.py) reports every error of a submit at
once (docs/accounts.md, "Forms and accessibility").
"""

from __future__ import annotations

from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    flash,
    get_flashed_messages,
    make_response,
    request,
    session,
)
from flask_babel import gettext, refresh
from flask_login import current_user, login_required
from markupsafe import Markup

from webapp.accounts import (
    change_email,
    change_password,
    i18n,
    language,
    reauth,
    registration,
    signins,
)
from webapp.accounts.result import Result
from webapp.accounts.session import refresh_session, signed_in_user
from webapp.core.render_cache import RenderCache
from webapp.devices import proof as devices_proof
from webapp.devices import section as devices_section
from webapp.devices.listing import Listing
from webapp.profile import connected, factors, forms, passkeys
from webapp.ui import danger_zone, pages, sections
from webapp.ui import forms as forms_core
from webapp.ui.sections import Screen, View

bp = Blueprint("profile", __name__, url_prefix="/profile")
pages.no_store(bp)

SECTIONS = (
    *("account", "devices", "password", "email", factors.SECTION),
    *(connected.SECTION, "danger"),
)


def _fragment(section: str | None) -> str | None:
    if section == danger_zone.SECTION:
        return "_danger_zone.html"
    if section == devices_section.SECTION:
        return devices_section.TEMPLATE
    return f"profile/_{section}.html" if section else None


def respond(view: View, status: int = 200, devices: Listing | None = None) -> Response:
    """The profile's page or one section of it (webapp/ui/pages.py decides which).
    `devices`: the device list when the caller read it already (read when shown)."""
    return pages.render(
        "profile/page.html",
        _fragment(view.section),
        oob=[f"profile/_{name}.html" for name in view.oob],
        success=view.success,
        has_errors=forms_core.has_errors(view.form),
        status=status,
        v=view,
        user=view.user,
        devices=devices or devices_section.listing(),
    )


PROFILE = Screen(respond, forms.blank)
danger_zone.add_routes(bp, PROFILE)
devices_section.add_routes(bp, PROFILE)
factors.add_routes(bp, PROFILE)
passkeys.add_routes(bp, PROFILE)
connected.add_routes(bp, PROFILE)


@bp.context_processor
def _factors() -> dict[str, object]:
    # called by the sections when they render
    return {"factors_state": factors.state, "connected_state": connected.state}


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
    the language determine; anything else goes into the key: the device list
    (Your devices: other browsers sign in and out without an event of the
    account), read once for the key and the render."""
    csrf_secret = session.get(current_app.config["WTF_CSRF_FIELD_NAME"])
    devices = devices_section.listing()
    if not csrf_secret:
        return respond(view, devices=devices)
    user = view.user
    owner = (user.tenant_id, user.id, csrf_secret, forms_core.is_fragment())
    # The factors section also shows whether the proof of identity is fresh.
    # The language as Flask-Babel would choose it (its `get_locale()` parses it
    # into a Locale first, which only a render needs).
    version = (user.version, i18n.select_locale(), devices.stamp, reauth.is_fresh())
    kept: RenderCache = current_app.extensions["profile.blank_pages"]
    html = kept.get_or_render(
        owner, version, lambda: Markup(respond(view, devices=devices).get_data(as_text=True))
    )
    resp = make_response(str(html), 200)
    resp.vary.add("HX-Request")  # as pages.render answers
    return resp


@bp.get("")
@login_required
def show() -> Response:
    view = PROFILE.view(signed_in_user())  # loaded once, by the session check
    for key in get_flashed_messages(category_filter=["message"]):
        if key == language.SAVED:
            view.section, view.success = "account", gettext(key)
    status = connected.flashed_answer(view)  # back from a provider, to connect it
    if status is not None:
        return respond(view, status)
    return respond(view) if view.success else blank_page(view)


@bp.post("/password")
@login_required
def password() -> Response:
    if not current_user.password_hash:
        return _set_password()
    form = forms.PasswordForm(request.form, account_email=current_user.email)
    if not form.validate():
        return sections.rejected(PROFILE, "password", form)
    result = sections.password_checked(
        lambda: change_password.change_password(
            current_user, form.current_password.data, form.new_password.data
        )
    )
    if result is None:
        return sections.limited(PROFILE, "password", form)
    if result.ok and result.session_token:
        refresh_session(sections.reread())
    return sections.result_response(PROFILE, "password", result, form)


def _set_password() -> Response:
    """The first password of an account made through a provider: a fresh
    proof of identity (the provider sign-in, or *Confirm with <Label>*)
    stands in for the current password it does not have."""
    form = forms.SetPasswordForm(request.form, account_email=current_user.email)
    if not form.validate():
        return sections.rejected(PROFILE, "password", form)
    if not reauth.is_fresh():
        form.add_error(None, gettext("profile.password.setStale"))
        return PROFILE.respond(PROFILE.view(signed_in_user(), "password", form), 403)
    result = change_password.set_password(current_user, form.new_password.data)
    if result.ok and result.session_token:
        refresh_session(sections.reread())
    return sections.result_response(PROFILE, "password", result, form)


@bp.post("/email")
@login_required
def email() -> Response:
    form = forms.EmailForm(request.form, account_email=current_user.email)
    if not form.validate():
        return sections.rejected(PROFILE, "email", form)
    result = sections.password_checked(
        lambda: change_email.change_email(
            current_user, form.new_email.data, form.current_password.data
        )
    )
    if result is None:
        return sections.limited(PROFILE, "email", form)
    return sections.result_response(PROFILE, "email", result, form, oob=("email_status",))


@bp.post("/resend-verification")
@login_required
def resend_verification() -> Response:
    me = signed_in_user()
    result = registration.resend_verification(me)
    if result.key.startswith("profile.account.resendLimit."):
        form = forms.blank("account", me.deletion_requested)
        form.add_error(None, sections.result_text(result))
        return respond(PROFILE.view(me, "account", form), 429)
    return sections.result_response(PROFILE, "account", result)


@bp.post("/sessions")
@login_required
def sessions() -> Response:
    """Sign out other sessions: at once with a fresh proof (`REAUTH_SECONDS`),
    else after the current password, as Your devices asks for it."""
    me = signed_in_user()
    form = forms.AccountForm(request.form)
    if devices_proof.needs_password(me):
        form.ask_proof()
        if not form.confirm.data:  # the button: ask for the proof first
            return respond(PROFILE.view(me, "account", form))
        if not form.validate():
            return sections.rejected(PROFILE, "account", form)

    def command() -> Result:
        proven = devices_proof.require_fresh_proof(me, form.current_password.data)
        return proven if not proven.ok else signins.revoke_other_sessions(current_user)

    result = sections.password_checked(command)
    if result is None:
        return sections.limited(PROFILE, "account", form)
    if result.session_token:
        refresh_session(sections.reread())
    return sections.result_response(PROFILE, "account", result, None if result.ok else form)


@bp.post("/language", endpoint="language")
@login_required
def change_language() -> Response:
    form = forms.AccountForm(request.form)
    result = language.change_language(current_user, form.language.data or "")
    if not result.ok:
        return sections.result_response(PROFILE, "account", result, form)
    # The whole page changes language: htmx reloads it (the banner comes back
    # through a flash); without JavaScript the answer is the page itself.
    if forms_core.is_fragment():
        flash(language.SAVED)
        resp = make_response("", 200)
        resp.headers["HX-Refresh"] = "true"
        resp.vary.add("HX-Request")
        return resp
    refresh_session(sections.reread())  # the page renders in the new language
    refresh()
    return sections.result_response(PROFILE, "account", result)


SECTION_OF = {
    "delete": "danger",
    "cancel_deletion": "danger",
    "resend_verification": "account",
    "sessions": "account",
    "language": "account",
    **factors.ENDPOINTS,
    **connected.ENDPOINTS,
}


def _section_of(endpoint: str) -> str:
    section = SECTION_OF.get(endpoint, endpoint)
    return section if section in SECTIONS else "account"


sections.on_unexpected_error(bp, PROFILE, _section_of, "profile")


def init_app(app: Flask) -> None:
    app.extensions["profile.blank_pages"] = RenderCache(size=KEPT_PAGES)
    app.register_blueprint(bp)
