"""/admin/api-tokens: the API's tokens (tenant, scopes, last use, state),
a form to create one (its secret shown once, in the answer), and Revoke
after a confirmation.
The same functions as `flask api-tokens create|list|revoke`, with the admin
as actor."""

from __future__ import annotations

from typing import Any

from flask import Response, request
from flask_babel import gettext
from wtforms import SelectMultipleField, StringField
from wtforms.validators import Length, ValidationError

from webapp import tenants
from webapp.admin import access
from webapp.admin.access import bp
from webapp.api import tokens
from webapp.core import db
from webapp.ui import pages
from webapp.ui.forms import Form, required


class TokenForm(Form):
    id_prefix = "admin-token"
    name = StringField(
        validators=[
            required("admin.tokens.nameRequired"),
            Length(max=tokens.MAX_NAME, message="admin.tokens.nameTooLong"),
        ]
    )
    tenant = StringField()
    scopes = SelectMultipleField(validate_choice=False)  # checked against tokens.SCOPES below

    def __init__(self, formdata: Any = None, tenant_ids: list[str] | None = None) -> None:
        self.tenant_ids = tenant_ids or []
        super().__init__(formdata)

    def validate_tenant(self, field: Any) -> None:
        if field.data not in self.tenant_ids:
            raise ValidationError(gettext("admin.errors.tenant"))

    def validate_scopes(self, field: Any) -> None:
        if not field.data or any(s not in tokens.SCOPES for s in field.data):
            raise ValidationError(gettext("admin.tokens.scopesRequired"))


def _page(
    form: TokenForm | None = None,
    *,
    secret: str | None = None,
    success: str | None = None,
    error: str | None = None,
    confirm: tokens.Token | None = None,
    status: int = 200,
) -> Response:
    with db.reading() as conn:
        ids = tenants.all_ids(conn)
        rows = tokens.all_tokens(conn)
    form = form or TokenForm(tenant_ids=ids)
    if form.name.errors:  # Length's message is a key: say it in the page's language
        form.name.errors = [gettext(str(e)) for e in form.name.errors]
    return pages.render(
        "admin/tokens.html",
        "admin/_tokens.html",
        success=success or secret,
        has_errors=form.has_errors or error is not None,
        status=status,
        form=form,
        tokens=rows,
        scopes=tokens.SCOPES,
        tenant_ids=ids,
        secret=secret,
        success_text=success,
        error_text=error,
        confirm=confirm,
    )


@bp.get("/api-tokens")
def api_tokens() -> Response:
    return _page()


@bp.post("/api-tokens")
def create_api_token() -> Response:
    with db.reading() as conn:
        ids = tenants.all_ids(conn)
    form = TokenForm(request.form, tenant_ids=ids)
    if not form.validate():
        return _page(form, status=422)
    try:
        with db.transaction() as conn:
            token, secret = tokens.create(
                conn,
                form.name.data or "",
                form.scopes.data or [],
                form.tenant.data or "",
                access.actor(),
            )
    except tokens.TokenError as exc:
        form.add_error(None, str(exc))
        return _page(form, status=422)
    return _page(secret=secret, success=gettext("admin.tokens.createdDone", name=token.name))


@bp.get("/api-tokens/<token_id>/revoke")
def confirm_revoke_api_token(token_id: str) -> Response:
    """Asks before revoking: a service using the token stops at once."""
    with db.reading() as conn:
        token = tokens.get(conn, token_id)
    if token is None or token.revoked:
        return _page(error=gettext("admin.tokens.notRevocable"), status=409)
    return _page(confirm=token)


@bp.post("/api-tokens/<token_id>/revoke")
def revoke_api_token(token_id: str) -> Response:
    try:
        with db.transaction() as conn:
            token = tokens.revoke(conn, token_id, access.actor())
    except tokens.TokenError:
        return _page(error=gettext("admin.tokens.notRevocable"), status=409)
    return _page(success=gettext("admin.tokens.revoked", name=token.name))
