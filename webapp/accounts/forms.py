"""The sign-up, sign-in and password-reset forms: fields in screen order, every rule that needs no
database, so one submit reports all of its errors at once."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask_babel import gettext
from wtforms import BooleanField, PasswordField, StringField
from wtforms.validators import ValidationError

from webapp.accounts import addresses, passwords
from webapp.ui.forms import Form, check, required


def email_problem(value: str) -> str | None:
    error = addresses.check(value).error  # invalid, or a look-alike address
    return gettext(error) if error else None


def policy_problem(password: str, email: str) -> str | None:
    cfg = current_app.config["APP_CONFIG"]
    problem = passwords.policy_error(password, email, cfg.password_min_length)
    return gettext(problem[0], **problem[1]) if problem else None


class RegisterForm(Form):
    id_prefix = "register"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])
    password = PasswordField(validators=[required("auth.register.passwordRequired")])
    confirm = PasswordField(validators=[required("auth.register.confirmRequired")])

    def validate_password(self, field: Any) -> None:
        problem = policy_problem(field.data, addresses.normalize(self.email.data or "") or "")
        if problem:
            raise ValidationError(problem)

    def validate_confirm(self, field: Any) -> None:
        if self.password.data and field.data != self.password.data:
            raise ValidationError(gettext("auth.register.mismatch"))


class LoginForm(Form):
    id_prefix = "login"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])
    password = PasswordField(validators=[required("auth.login.passwordRequired")])
    remember = BooleanField()


class ResetRequestForm(Form):
    """ "Forgot password?": the address to send a reset link to."""

    id_prefix = "reset"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])


class ResetPasswordForm(Form):
    """The new password from a reset link. `account_email` (the link's account, once
    the link is checked) lets the policy refuse a password built on the address."""

    id_prefix = "reset"
    new_password = PasswordField(validators=[required("profile.password.newRequired")])
    confirm_password = PasswordField(validators=[required("profile.password.confirmRequired")])

    def __init__(self, formdata: Any = None, account_email: str = "", **kw: Any) -> None:
        self.account_email = account_email
        super().__init__(formdata, **kw)

    def validate_new_password(self, field: Any) -> None:
        problem = policy_problem(field.data, self.account_email)
        if problem:
            raise ValidationError(problem)

    def validate_confirm_password(self, field: Any) -> None:
        if self.new_password.data and field.data != self.new_password.data:
            raise ValidationError(gettext("profile.password.mismatch"))
