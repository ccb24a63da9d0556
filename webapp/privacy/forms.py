"""The privacy center's forms (fields in screen order, rules that need neither
the database nor the password), and each section's empty form."""

from __future__ import annotations

from wtforms import StringField

from webapp.accounts.forms import email_problem
from webapp.ui import danger_zone
from webapp.ui.forms import Form, check, current_password, required


class ExportForm(Form):
    """No fields: its errors concern the whole section."""

    id_prefix = "privacy-export"


class ActivityForm(Form):
    id_prefix = "privacy-activity"


class RestrictForm(Form):
    id_prefix = "privacy-restrict"
    current_password = current_password()


class DeleteLinkForm(Form):
    id_prefix = "delete-account"
    email = StringField(validators=[required("auth.errors.emailRequired"), check(email_problem)])


def blank(section: str, deletion_requested: bool = False) -> Form:
    if section == danger_zone.SECTION:  # the danger zone the profile shows too
        return danger_zone.blank(deletion_requested)
    forms: dict[str, type[Form]] = {
        "export": ExportForm,
        "activity": ActivityForm,
        "restrict": RestrictForm,
    }
    return forms[section]()
