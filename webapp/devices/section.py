"""The Your devices section of the profile: one form whose buttons name what
to sign out (one device's handle, or `others`), with the current password as
the fresh proof (proof.py). Answered on the profile's `Screen`, in its htmx
pattern (the section swaps itself and its banner; without JavaScript the page
comes back); the template is templates/devices/_devices.html."""

from __future__ import annotations

import re

from flask import Blueprint, Response, request
from flask_babel import gettext
from flask_login import login_required
from wtforms import HiddenField, StringField

from webapp.accounts.result import Result
from webapp.accounts.session import signed_in_user
from webapp.devices import sign_out
from webapp.devices.listing import Listing
from webapp.devices.proof import needs_password, require_fresh_proof
from webapp.ui import sections
from webapp.ui.forms import Form, current_password
from webapp.ui.sections import Screen

SECTION = "devices"
TEMPLATE = "devices/_devices.html"
OTHERS = "others"
_HANDLE = re.compile(r"[0-9a-f]{32}")


class DevicesForm(Form):
    """`device`: a handle, or `others`. Without `confirm` (the list's buttons)
    the section asks for the proof; with it (that step's form) it signs out."""

    id_prefix = "profile-devices"
    device = StringField()
    confirm = HiddenField()
    current_password = current_password()

    @property
    def confirming(self) -> bool:
        """The section shows the proof step for `device`."""
        return bool(getattr(self, "_confirming", False))

    def ask_proof(self) -> None:
        self._confirming = True


def blank() -> Form:
    return DevicesForm()


def listing() -> Listing:
    """The signed-in user's devices for this render (read when shown)."""
    me = signed_in_user()
    return Listing(me, me.sign_in)


def _refused(screen: Screen, form: DevicesForm, key: str) -> Response:
    form.add_error(None, gettext(key))
    return screen.respond(screen.view(signed_in_user(), SECTION, form), 422)


def _ask_proof(screen: Screen, form: DevicesForm, target: str) -> Response:
    """The proof step for `target`, if it names one of the other devices."""
    if target != OTHERS:
        device = next((d for d in listing().devices if d.handle == target), None)
        if device is None or device.current:
            key = sign_out.THIS_DEVICE if device else sign_out.UNKNOWN
            return _refused(screen, DevicesForm(), key)
    form.ask_proof()
    return screen.respond(screen.view(signed_in_user(), SECTION, form), 200)


def sign_out_devices(screen: Screen) -> Response:
    form = DevicesForm(request.form)
    target = (form.device.data or "").strip()
    if target != OTHERS and not _HANDLE.fullmatch(target):
        return _refused(screen, form, sign_out.UNKNOWN)  # costs no password check
    me = signed_in_user()
    if needs_password(me):
        if not form.confirm.data:  # the list's button: ask for the proof first
            return _ask_proof(screen, form, target)
        form.ask_proof()
        if not form.validate():
            return sections.rejected(screen, SECTION, form)

    def command() -> Result:
        proven = require_fresh_proof(me, form.current_password.data)
        if not proven.ok:
            return proven
        if target == OTHERS:
            return sign_out.sign_out_others(me)
        return sign_out.sign_out_device(me, target)

    result = sections.password_checked(command)
    if result is None:
        return sections.limited(screen, SECTION, form)
    if result.key in (sign_out.UNKNOWN, sign_out.THIS_DEVICE):
        form = DevicesForm()  # gone meanwhile: nothing left to confirm
    return sections.result_response(screen, SECTION, result, form)


def add_routes(bp: Blueprint, screen: Screen) -> None:
    """`POST <bp>/devices` (endpoint `devices`), signed in, answered on `screen`."""
    bp.add_url_rule(
        "/devices", "devices", login_required(lambda: sign_out_devices(screen)), methods=["POST"]
    )
