"""The profile's forms, one per section: fields in screen order and every rule that
needs neither the database nor the current password (those come from the service)."""

from __future__ import annotations

from typing import Any

from flask_babel import gettext
from wtforms import HiddenField, PasswordField, StringField
from wtforms.validators import ValidationError

from webapp.accounts import addresses
from webapp.accounts.forms import email_problem, policy_problem
from webapp.devices import section as devices_section
from webapp.profile import connected, factors
from webapp.ui import danger_zone
from webapp.ui.forms import Form, check, current_password, required


class AccountForm(Form):
    """Language, resend verification, sign out other sessions. Signing out
    the others needs a fresh proof (issue 21, point 3): without one, the
    button's answer asks for the current password (`confirm`)."""

    id_prefix = "profile-account"
    language = StringField()
    confirm = HiddenField()
    current_password = current_password()

    @property
    def confirming(self) -> bool:
        return bool(getattr(self, "_confirming", False))

    def ask_proof(self) -> None:
        self._confirming = True


class AccountBound(Form):
    """A form that checks values against the signed-in account."""

    def __init__(self, formdata: Any = None, account_email: str = "", **kw: Any) -> None:
        self.account_email = account_email
        super().__init__(formdata, **kw)


class PasswordForm(AccountBound):
    id_prefix = "profile-password"
    current_password = current_password()
    new_password = PasswordField(validators=[required("profile.password.newRequired")])
    confirm_password = PasswordField(validators=[required("profile.password.confirmRequired")])

    def validate_new_password(self, field: Any) -> None:
        problem = policy_problem(field.data, self.account_email)
        if problem:
            raise ValidationError(problem)

    def validate_confirm_password(self, field: Any) -> None:
        if self.new_password.data and field.data != self.new_password.data:
            raise ValidationError(gettext("profile.password.mismatch"))


class SetPasswordForm(PasswordForm):
    """An account without a password sets its first one: no current password
    (a fresh proof of identity instead, checked by the view)."""

    current_password = None  # type: ignore[assignment]


class EmailForm(AccountBound):
    id_prefix = "profile-email"
    new_email = StringField(
        validators=[required("profile.email.newRequired"), check(email_problem)]
    )
    current_password = current_password()

    def validate_new_email(self, field: Any) -> None:
        if addresses.normalize(field.data) == self.account_email:
            raise ValidationError(gettext("profile.errors.emailUnchanged"))


def blank(section: str, deletion_requested: bool = False) -> Form:
    """The empty form a section shows when it was not the one submitted."""
    if section == danger_zone.SECTION:
        return danger_zone.blank(deletion_requested)
    if section == devices_section.SECTION:
        return devices_section.blank()
    if section == factors.SECTION:
        return factors.blank()
    if section == connected.SECTION:
        return connected.blank()
    forms: dict[str, type[Form]] = {
        "account": AccountForm,
        "password": PasswordForm,
        "email": EmailForm,
    }
    return forms[section]()
