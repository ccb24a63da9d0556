"""The *Passkeys* part of the profile's two-step section: add one (named by
its owner; JSON options for static/passkeys.js, then the answer posted as an
htmx form), remove one, and *Confirm it's you* with a passkey. Adding and
removing need a fresh proof of identity (accounts/reauth.py), as every factor
change does; the answers are the section's (profile/factors.py)."""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, request
from flask_babel import gettext
from flask_login import login_required

from webapp.accounts import ratelimit, reauth
from webapp.accounts.factors import challenges, passkey_commands
from webapp.accounts.factors.forms import AddPasskeyForm, PasskeyForm
from webapp.accounts.session import signed_in_user
from webapp.profile.factors import LIMIT, SECTION, answer, limited, stale
from webapp.ui import sections
from webapp.ui.sections import Screen


def _json_refusal(status: int) -> Response:
    """static/passkeys.js then posts the form without an answer, and the
    section's own answer says what is wrong (stale proof, a bad name, 429)."""
    return jsonify(error=status), status  # type: ignore[return-value]


def add_options() -> Response:
    if not reauth.is_fresh():
        return _json_refusal(403)
    if not AddPasskeyForm(request.form).validate():
        return _json_refusal(422)
    body = passkey_commands.registration_options(signed_in_user())
    return Response(body, 200, mimetype="application/json")


def add(screen: Screen) -> Response:
    if not reauth.is_fresh():
        return stale(screen)
    form = AddPasskeyForm(request.form)
    if not form.validate():
        return sections.rejected(screen, SECTION, form)
    if not form.credential.data:
        # The browser's InvalidStateError: this authenticator holds one of the
        # account's passkeys already (the options exclude them).
        known = form.client_error.data == "InvalidStateError"
        key, params = (
            (passkey_commands.KNOWN, {})
            if known
            else passkey_commands.unanswered(form.client_error.data)
        )
        form.add_error(None, gettext(key, **params))
        return answer(screen, 422, form)
    result = passkey_commands.add(signed_in_user(), form.name.data, form.credential.data)
    if result.ok:
        g.factors_codes = result.params["codes"]
        return answer(screen, 200, success=gettext(result.key, name=result.params["name"]))
    return sections.result_response(screen, SECTION, result, form)


def remove(screen: Screen) -> Response:
    if not reauth.is_fresh():
        return stale(screen)
    result = passkey_commands.remove(signed_in_user(), request.form.get("passkey", "")[:36])
    return sections.result_response(screen, SECTION, result)


def confirm_options() -> Response:
    me = signed_in_user()
    if not ratelimit.allowed(LIMIT, me.id):
        return _json_refusal(429)
    body = passkey_commands.authentication_options(challenges.REAUTH, me)
    return Response(body, 200, mimetype="application/json")


def confirm_identity(screen: Screen) -> Response:
    """*Confirm it's you* with a passkey (limited like every second factor)."""
    me = signed_in_user()
    form = PasskeyForm(request.form)
    if not ratelimit.allowed(LIMIT, me.id):
        return limited(screen, form)
    if not form.credential.data:
        key, params = passkey_commands.unanswered(form.client_error.data)
        form.add_error(None, gettext(key, **params))
        return answer(screen, 422, form)
    checked = passkey_commands.check(challenges.REAUTH, form.credential.data, user=me)
    if checked.user is None:
        ratelimit.count(LIMIT, me.id)
        form.add_error(None, gettext(checked.error or passkey_commands.FAILED))
        return answer(screen, 422, form)
    reauth.record_proof()
    return answer(screen, 200, success=gettext("factors.reauth.done"))


def add_routes(bp: Blueprint, screen: Screen) -> None:
    """Under `<bp>/factors/passkeys/...`, signed in, answered on `screen`."""
    routes = {
        "/factors/passkeys/add": ("passkey_add", add),
        "/factors/passkeys/remove": ("passkey_remove", remove),
        "/factors/passkeys/confirm-identity": ("passkey_confirm", confirm_identity),
    }
    for path, (endpoint, view) in routes.items():
        bp.add_url_rule(
            path, endpoint, login_required(lambda view=view: view(screen)), methods=["POST"]
        )
    for path, endpoint, json_view in (
        ("/factors/passkeys/options", "passkey_options", add_options),
        ("/factors/passkeys/confirm-identity/options", "passkey_confirm_options", confirm_options),
    ):
        bp.add_url_rule(path, endpoint, login_required(json_view), methods=["POST"])
