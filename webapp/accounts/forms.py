"""The sign-up and sign-in forms: fields in screen order, every rule that needs no
database, so one submit reports all of its errors at once."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask_babel import gettext
from wtforms import BooleanField, PasswordField, StringField
from wtforms.validators import ValidationError

from webapp.accounts import emails, passwords
from webapp.forms import Form, check, required


def email_problem(value: str) -> str | None:
    error = emails.check(value).error  # invalid, or look-alike characters
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
        problem = policy_problem(field.data, emails.normalize(self.email.data or "") or "")
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
