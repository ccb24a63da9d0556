"""Screens made of sections (the profile, the privacy center, the console):
the plumbing they share, beside webapp/ui/pages.py (which picks page or fragment).

A `Screen` knows how to answer (`respond(view, status)`) and each section's
empty form. A `View` is what one answer renders: the user, the answered section
with its form or success message, and out-of-band fragments. The answers every
section gives: `result_response` (a command's `Result`), `rejected` (422 with
every error at once), `limited` (429), and `on_unexpected_error` (a bug or an
outage: the section says so). Answers are never stored (`pages.no_store`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from flask import Blueprint, Response, make_response, render_template, request
from flask_babel import format_date, gettext
from flask_login import current_user
from werkzeug.exceptions import HTTPException

from webapp.accounts import ratelimit, users
from webapp.accounts.credentials import check_password
from webapp.accounts.result import GENERIC, INVALID_CREDENTIALS, Result
from webapp.accounts.session import signed_in_user
from webapp.accounts.users import User
from webapp.core import db, security
from webapp.ui.forms import Form

log = logging.getLogger(__name__)


@dataclass
class View:
    """What a render of the page or of one section needs."""

    user: User
    section: str | None = None
    form: Form | None = None  # the answered section's form: what was typed, what is wrong
    success: str | None = None  # the answered section's success message
    oob: tuple[str, ...] = ()
    # The empty form of a section that was not submitted (the screen's own).
    blank: Callable[[str, bool], Form] = field(default=lambda section, deleting: Form())

    def form_for(self, section: str) -> Form:
        if section == self.section and self.form is not None:
            return self.form
        return self.blank(section, self.user.deletion_requested)

    def success_for(self, section: str) -> str | None:
        return self.success if section == self.section else None


@dataclass(frozen=True)
class Screen:
    """How a screen answers, and its sections' empty forms."""

    respond: Callable[[View, int], Response]
    blank: Callable[[str, bool], Form]

    def view(
        self,
        user: User,
        section: str | None = None,
        form: Form | None = None,
        success: str | None = None,
        oob: tuple[str, ...] = (),
    ) -> View:
        return View(user, section, form, success, oob, blank=self.blank)


def reread() -> User:
    """The user's row read again, after this request changed it (the session's
    copy, `signed_in_user()`, was loaded before the change)."""
    with db.reading() as conn:
        user = users.get_user(conn, current_user.id)
    if user is None:
        raise LookupError("signed-in user has no row")
    return user


def result_text(result: Result) -> str:
    params = dict(result.params)
    if "due_at" in params:
        params["date"] = format_date(params.pop("due_at"), format="long")
    return gettext(result.key, **params)


def result_response(
    screen: Screen,
    section: str,
    result: Result,
    form: Form | None = None,
    oob: tuple[str, ...] = (),
) -> Response:
    """Success: the section comes back empty, with its message. Else the form
    with the error (422, or the result's own status)."""
    user = reread()
    if result.ok:
        return screen.respond(screen.view(user, section, success=result_text(result), oob=oob), 200)
    form = form or screen.blank(section, user.deletion_requested)
    form.add_error(result.field, result_text(result))
    return screen.respond(screen.view(user, section, form), result.status or 422)


def limited(screen: Screen, section: str, form: Form) -> Response:
    form.add_error(None, gettext("auth.errors.tooManyAttempts"))
    return screen.respond(screen.view(signed_in_user(), section, form), 429)


def password_checked(command: Callable[[], Result]) -> Result | None:
    """Run `command`, which checks the user's current password, under the
    limit of 5 *failed* checks per minute: None (answer `limited`) when they
    are used up. Only a wrong current password counts; a correct one, and a
    command refused before it checks the password, cost nothing, so a person
    making several changes is never blocked by their own password."""
    if not ratelimit.allowed("password-check", current_user.id):
        return None
    result = command()
    if result.key == INVALID_CREDENTIALS and result.field == "current_password":
        ratelimit.count("password-check", current_user.id)
    return result


def _current_password(password: str) -> Result:
    if check_password(signed_in_user(), password):
        return Result(True, "")
    return Result.error(INVALID_CREDENTIALS, "current_password")


def rejected(screen: Screen, section: str, form: Form) -> Response:
    """422 with every error of the submit at once. A current password that was
    given is checked too (limited like any check: a wrong one counts), so its
    error comes with the others instead of after the next submit."""
    current = form._fields.get("current_password")
    if current is not None and current.data and not current.errors:
        checked = password_checked(lambda: _current_password(current.data))
        if checked is None:
            return limited(screen, section, form)
        if not checked.ok:
            form.add_error("current_password", gettext(INVALID_CREDENTIALS))
    return screen.respond(screen.view(signed_in_user(), section, form), 422)


def on_unexpected_error(
    bp: Blueprint, screen: Screen, section_of: Callable[[str], str | None], name: str
) -> None:
    """A bug or an outage in one of `bp`'s sections: that section answers 500 and
    says so (nothing typed elsewhere on the page is lost), never a blank swap;
    a request that is no section's gets the error page. `section_of(endpoint)`
    names the section of an endpoint (its last part)."""

    @bp.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response | HTTPException:
        if isinstance(exc, HTTPException):
            return exc
        if security.is_unavailable(exc):
            return security.unavailable(exc)
        log.exception("%s request failed", name, exc_info=exc)
        section = section_of((request.endpoint or "").rsplit(".", 1)[-1])
        try:
            user = reread()
        except Exception:
            section = None
        if section is None:
            return make_response(render_template("error.html", message=gettext(GENERIC)), 500)
        form = screen.blank(section, user.deletion_requested)
        form.add_error(None, gettext(GENERIC))
        resp = screen.respond(screen.view(user, section, form), 500)
        resp.headers["X-Section-Fragment"] = "1"  # static/app.js lets htmx swap this 500
        return resp
