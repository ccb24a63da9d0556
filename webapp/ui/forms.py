"""One error pattern for every form (GOV.UK's): validation in a `Form`, display in
the macros of `templates/_macros.html`.

A form class lists its fields in screen order with their rules; `validate()`
collects every error of a submit at once (one message per field, in field order).
Errors the form cannot know (a wrong current password, an address in use) are
added afterwards with `add_error`. The templates render `error_summary(form)` and
`field(form, name, ...)`; docs/accounts.md, "Forms and accessibility", has the recipe.

CSRF is checked app-wide by Flask-WTF's CSRFProtect, so these forms carry no token
field of their own (the `csrf()` macro renders the hidden input).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import wtforms
from flask import Flask, render_template, request
from flask_babel import lazy_gettext
from wtforms.meta import DefaultMeta
from wtforms.validators import InputRequired, StopValidation, ValidationError

__all__ = [
    "Form",
    "Problem",
    "check",
    "has_errors",
    "init_app",
    "is_fragment",
    "live_status",
    "required",
]


class _Meta(DefaultMeta):
    def bind_field(self, form: Any, unbound_field: Any, options: dict[str, Any]) -> Any:
        # Ids unique on the page: `<form id_prefix>-<field name>` unless a field sets one.
        if "id" not in unbound_field.kwargs:
            name = str(options["name"]).replace("_", "-")
            options = {**options, "id": f"{form.id_prefix}-{name}"}
        return unbound_field.bind(form=form, **options)


@dataclass(frozen=True)
class Problem:
    """One line of the error summary: its text and the id it links to (if any)."""

    text: str
    href: str | None


class Form(wtforms.Form):
    """Base class of every form. Subclasses set `id_prefix` (unique on the page)."""

    Meta = _Meta
    id_prefix: ClassVar[str] = "form"

    def __init__(self, formdata: Any = None, **kwargs: Any) -> None:
        super().__init__(formdata, **kwargs)
        self.form_wide: list[Problem] = []
        for f in self:  # unvalidated fields have a tuple; add_error needs a list
            f.errors = list(f.errors)

    def add_error(self, name: str | None, message: Any, link_to: str | None = None) -> None:
        """An error found after `validate()`. With a field `name`: shown at that field
        (if it has none yet: one message per field) and linked from the summary.
        With None: an error of the whole form (rate limit, unexpected failure), shown
        in the summary only, linked to field `link_to` when one is where to correct it."""
        if name is not None and name in self:
            if not self[name].errors:
                self[name].errors.append(message)
            return
        href = str(self[link_to].id) if link_to is not None and link_to in self else None
        self.form_wide.append(Problem(str(message), href))

    @property
    def has_errors(self) -> bool:
        return bool(self.form_wide) or any(f.errors for f in self)

    def problems(self) -> list[Problem]:
        """The summary's lines: errors of the whole form first, then each field's
        message in field order."""
        return [
            *self.form_wide,
            *(Problem(str(f.errors[0]), str(f.id)) for f in self if f.errors),
        ]


def required(message_key: str) -> InputRequired:
    """Field is required; `message_key` is the i18n key of its message."""
    return InputRequired(message=lazy_gettext(message_key))


def check(rule: Callable[[str], str | None]) -> Callable[[Any, Any], None]:
    """A validator from a function of the value returning an error text or None.
    Runs only on non-empty values (emptiness is `required`'s job)."""

    def validator(_form: Any, field: Any) -> None:
        if not field.data:
            raise StopValidation()
        problem = rule(field.data)
        if problem:
            raise ValidationError(problem)

    return validator


def current_password() -> wtforms.PasswordField:
    """The *Current password* field of every form that asks for it."""
    return wtforms.PasswordField(validators=[required("profile.errors.currentPasswordRequired")])


def has_errors(*forms: Form | None) -> bool:
    return any(f is not None and f.has_errors for f in forms)


def is_fragment() -> bool:
    """True when the answer is swapped into the page by htmx (not a page load):
    then the script moves focus, and nothing carries `autofocus`."""
    return bool(getattr(request, "htmx", False))


def live_status(text: str | None) -> str:
    """Out-of-band update of the page's persistent live region (base.html): the
    region itself stays, so screen readers announce the new text."""
    return render_template("_live_status.html", text=text or "", oob=True)


def init_app(app: Flask) -> None:
    app.jinja_env.globals["is_fragment"] = is_fragment
