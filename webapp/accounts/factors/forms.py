"""The factor forms: the code at sign-in, a recovery code instead, the
set-up's confirming code, turning the app off, "Confirm it's you", and a
passkey's answer (with its name when one is added). Fields
in screen order; what needs the database (is the code right?) is checked by
the commands."""

from __future__ import annotations

from typing import Any

from flask_babel import gettext
from wtforms import HiddenField, PasswordField, StringField, ValidationError
from wtforms.validators import StopValidation

from webapp.accounts.factors import recovery, totp
from webapp.accounts.factors.passkey_commands import NAME_MAX
from webapp.ui.forms import Form, current_password, required


def _check_code(_form: Any, field: Any) -> None:
    if field.data and totp.normalized(field.data) is None:
        raise ValidationError(gettext("factors.errors.codeFormat"))


def _check_code_or_recovery(_form: Any, field: Any) -> None:
    value = field.data or ""
    if value and totp.normalized(value) is None and recovery.normalized(value) is None:
        raise ValidationError(gettext("factors.errors.codeFormat"))


def _check_recovery(_form: Any, field: Any) -> None:
    if field.data and recovery.normalized(field.data) is None:
        raise ValidationError(gettext("factors.errors.recoveryFormat"))


class SignInCodeForm(Form):
    id_prefix = "signin-code"
    code = StringField(validators=[required("factors.errors.codeRequired"), _check_code])


class SignInRecoveryForm(Form):
    id_prefix = "signin-recovery"
    recovery_code = StringField(
        validators=[required("factors.errors.recoveryRequired"), _check_recovery]
    )


class ConfirmSetupForm(Form):
    id_prefix = "profile-totp"
    code = StringField(validators=[required("factors.errors.codeRequired"), _check_code])


class TurnOffForm(Form):
    id_prefix = "profile-totp-off"
    current_password = current_password()
    code = StringField(
        validators=[required("factors.errors.codeRequired"), _check_code_or_recovery]
    )


class ReauthForm(Form):
    """*Confirm it's you*: the password, or a code from the app."""

    id_prefix = "profile-reauth"
    password = PasswordField()
    code = StringField(validators=[_check_code])

    def validate_password(self, field: Any) -> None:
        if not field.data and not self.code.data:
            raise ValidationError(gettext("factors.reauth.required"))


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _check_name(_form: Any, field: Any) -> None:
    if not field.data:  # empty once trimmed (InputRequired sees the untrimmed input)
        raise StopValidation(gettext("passkeys.errors.nameRequired"))
    if len(field.data or "") > NAME_MAX:
        raise ValidationError(gettext("passkeys.errors.nameTooLong", max=NAME_MAX))
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in field.data or ""):
        raise ValidationError(gettext("passkeys.errors.nameInvalid"))


class PasskeyForm(Form):
    """A passkey's answer, as static/passkeys.js posts it: the credential (JSON)
    or, when the browser gave none, why (`client_error`: its error's name)."""

    id_prefix = "passkey"
    credential = HiddenField()
    client_error = HiddenField()


class AddPasskeyForm(PasskeyForm):
    id_prefix = "profile-passkey"
    name = StringField(
        filters=[_strip], validators=[required("passkeys.errors.nameRequired"), _check_name]
    )


class FactorsForm(Form):
    """The section's buttons (no fields: errors concern the whole section)."""

    id_prefix = "profile-factors"
