"""The privacy center's forms (fields in screen order, rules that need neither
the database nor the password), and each section's empty form."""

from __future__ import annotations

from wtforms import PasswordField, StringField

from webapp.accounts.forms import email_problem
from webapp.forms import Form, check, required
from webapp.profile import forms as profile_forms


class ExportForm(Form):
    """No fields: its errors concern the whole section."""

    id_prefix = "privacy-export"


class ActivityForm(Form):
    id_prefix = "privacy-activity"


class RestrictForm(Form):
    id_prefix = "privacy-restrict"
    current_password = PasswordField(
        validators=[required("profile.errors.currentPasswordRequired")]
    )


class DeleteLinkForm(Form):
    id_prefix = "delete-account"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])


def blank(section: str, deletion_requested: bool = False) -> Form:
    if section == "danger":  # the profile's danger zone, reused as it is
        return profile_forms.blank(section, deletion_requested)
    forms: dict[str, type[Form]] = {
        "export": ExportForm,
        "activity": ActivityForm,
        "restrict": RestrictForm,
    }
    return forms[section]()
