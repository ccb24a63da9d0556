"""The profile's *Connected accounts* section: the identities at providers
linked to the account (provider, the address it gave, when connected, last
used), "Connect <Label>" (a round trip through the provider, which comes back
to the profile) and "Disconnect". Both need a fresh proof of identity
(accounts/reauth.py), as passkeys do; disconnecting the last way to sign in
is refused by the account, with what to add first. Answered on the profile
`Screen` in its htmx pattern; the rules are accounts/identities'."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, Response, get_flashed_messages, make_response, redirect, request
from flask_babel import gettext
from flask_login import login_required

from webapp.accounts import reauth
from webapp.accounts.factors.forms import ReauthForm
from webapp.accounts.identities import commands, flow, store
from webapp.accounts.identities import views as identity_views
from webapp.accounts.identities.protocol import ProviderError
from webapp.accounts.identities.store import Identity
from webapp.accounts.session import signed_in_user
from webapp.accounts.users import User
from webapp.core import db
from webapp.core.identity_providers import ProviderSettings
from webapp.profile import factors
from webapp.ui import forms as forms_core
from webapp.ui import sections
from webapp.ui.forms import Form
from webapp.ui.sections import Screen, View

SECTION = "connected"
ENDPOINTS = {
    name: SECTION
    for name in ("connect", "disconnect", "connected_confirm", "connected_confirm_with")
}


class ConnectedReauthForm(ReauthForm):
    id_prefix = "profile-connected-reauth"


@dataclass(frozen=True)
class Row:
    identity: Identity
    label: str


@dataclass(frozen=True)
class State:
    rows: list[Row]
    confirm_with: list[ProviderSettings]  # linked and configured: a proof by a round trip
    providers: tuple[ProviderSettings, ...]
    fresh: bool
    reauth: Form
    with_code: bool


def blank() -> Form:
    return Form()


def state(user: User, form: Form | None) -> State:
    labels = {p.name: p.label for p in flow.providers()}
    found: list[Identity] = []
    if user.identities:  # the row says whether there is a list to read
        with db.reading() as conn:
            found = store.identities_of(conn, user.tenant_id, user.id)
    linked = {i.provider for i in found}
    return State(
        [Row(i, labels.get(i.provider, i.provider)) for i in found],
        [p for p in flow.providers() if p.name in linked],
        flow.providers(),
        reauth.is_fresh(),
        form if isinstance(form, ConnectedReauthForm) else ConnectedReauthForm(),
        user.totp_since is not None,
    )


def _answer(
    screen: Screen, status: int, form: Form | None = None, success: str | None = None
) -> Response:
    user = sections.reread()
    return screen.respond(screen.view(user, SECTION, form, success), status)


def _stale(screen: Screen) -> Response:
    form = ConnectedReauthForm()
    form.add_error(None, gettext(factors.STALE))
    return _answer(screen, 403, form)


def connect(screen: Screen) -> Response:
    """Off to the provider (htmx: by `HX-Redirect`); it comes back to the profile."""
    if not reauth.is_fresh():
        return _stale(screen)
    return _to_provider(screen, flow.LINK)


def confirm_with(screen: Screen) -> Response:
    """*Confirm it's you* by signing in at a provider linked to the account."""
    return _to_provider(screen, flow.REAUTH)


def _to_provider(screen: Screen, purpose: str) -> Response:
    p = flow.provider(request.form.get("provider", "")[:40])
    if p is None:
        form = Form()
        form.add_error(None, gettext("identities.errors.unknown"))
        return _answer(screen, 422, form)
    try:
        url = flow.begin(p, purpose, None, signed_in_user().id)
    except ProviderError as exc:
        form = Form()
        form.add_error(None, gettext(exc.key, label=p.label))
        return _answer(screen, 502, form)
    if forms_core.is_fragment():
        resp = make_response("", 200)
        resp.headers["HX-Redirect"] = url
        resp.vary.add("HX-Request")
        return resp
    return redirect(url)  # type: ignore[return-value]


def disconnect(screen: Screen) -> Response:
    if not reauth.is_fresh():
        return _stale(screen)
    labels = {p.name: p.label for p in flow.providers()}
    result = commands.unlink(signed_in_user(), request.form.get("identity", "")[:36], labels)
    return sections.result_response(screen, SECTION, result)


def confirm_identity(screen: Screen) -> Response:
    """*Confirm it's you* in this section: the password or a code, as the
    two-step section checks it (limited alike)."""
    return factors.confirm_identity(screen, SECTION, ConnectedReauthForm)


def flashed_answer(view: View) -> int | None:
    """The answer of a round trip to connect a provider (flashed by the
    callback, accounts/identities/views.py) put on `view`: its status, or None."""
    for message in get_flashed_messages(category_filter=[identity_views.PROFILE_CATEGORY]):
        outcome, key, label = (str(message).split("|", 2) + ["", ""])[:3]
        view.section = SECTION
        if outcome == "ok":
            view.success = gettext(key, label=label)
            return 200
        view.form = blank()
        view.form.add_error(None, gettext(key, label=label))
        return 422
    return None


def add_routes(bp: Blueprint, screen: Screen) -> None:
    """Under `<bp>/connected/...`, signed in, answered on `screen`."""
    routes = {
        "/connected/connect": ("connect", connect),
        "/connected/disconnect": ("disconnect", disconnect),
        "/connected/confirm-identity": ("connected_confirm", confirm_identity),
        "/connected/confirm-with": ("connected_confirm_with", confirm_with),
    }
    for path, (endpoint, view) in routes.items():
        bp.add_url_rule(
            path, endpoint, login_required(lambda view=view: view(screen)), methods=["POST"]
        )
