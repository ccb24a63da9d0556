"""The danger zone, *Delete account* / *Cancel deletion*: one section shown on
two screens (the profile and the privacy center), with one template
(`_danger_zone.html`), these forms and these two answers, given on whichever
`Screen` it was submitted to. The rules are the account's (accounts/deletion.py).
"""

from __future__ import annotations

from flask import Blueprint, Response, request
from flask_login import current_user, login_required

from webapp.accounts import deletion
from webapp.accounts.account import Account, State
from webapp.accounts.result import Result
from webapp.accounts.session import refresh_session, signed_in_user
from webapp.ui import sections
from webapp.ui.forms import Form, current_password
from webapp.ui.sections import Screen

SECTION = "danger"


class DeleteForm(Form):
    id_prefix = "profile-delete"
    current_password = current_password()


class CancelDeletionForm(Form):
    """No fields: its errors concern the whole form."""

    id_prefix = "profile-cancel-deletion"


def blank(deletion_requested: bool) -> Form:
    return CancelDeletionForm() if deletion_requested else DeleteForm()


def request_deletion(screen: Screen) -> Response:
    """*Delete account*, answered on `screen`."""
    if Account(signed_in_user()).state is State.DELETION_REQUESTED:
        # A second tab: the section now offers Cancel, so no form to check.
        refused = Result.error("profile.danger.alreadyRequested")
        return sections.result_response(screen, SECTION, refused)
    form = DeleteForm(request.form)
    if not form.validate():
        return sections.rejected(screen, SECTION, form)
    result = sections.password_checked(
        lambda: deletion.request_deletion(current_user, form.current_password.data)
    )
    if result is None:
        return sections.limited(screen, SECTION, form)
    if result.ok and result.session_token:
        refresh_session(sections.reread())  # every other session ends; this one stays to cancel
    return sections.result_response(screen, SECTION, result, form)


def cancel_deletion(screen: Screen) -> Response:
    """*Cancel deletion*, answered on `screen`."""
    return sections.result_response(screen, SECTION, deletion.cancel_deletion(current_user))


def add_routes(bp: Blueprint, screen: Screen) -> None:
    """`POST <bp>/delete` and `<bp>/cancel-deletion` (endpoints `delete`,
    `cancel_deletion`), signed in, answered on `screen`."""
    bp.add_url_rule(
        "/delete", "delete", login_required(lambda: request_deletion(screen)), methods=["POST"]
    )
    bp.add_url_rule(
        "/cancel-deletion",
        "cancel_deletion",
        login_required(lambda: cancel_deletion(screen)),
        methods=["POST"],
    )
