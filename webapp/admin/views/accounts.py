"""/admin/accounts: look up one account by its address (exact, as stored):
its state, and whether it has a second factor. Never which factor, never a
secret: an operator who can read this learns only whether `flask users
reset-factors` would change anything."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import Response, request

from webapp.accounts import addresses
from webapp.accounts.account import Account
from webapp.accounts.factors import store as factors
from webapp.accounts.users import find_by_email
from webapp.admin.access import bp
from webapp.admin.views.ops import chosen_tenant
from webapp.core import db
from webapp.ui import pages

MAX_ADDRESS = 320


@dataclass(frozen=True)
class Found:
    email: str
    state: str
    created_at: datetime
    is_admin: bool
    second_factor: bool


@bp.get("/accounts")
def accounts() -> Response:
    tenant, known = chosen_tenant()
    typed = (request.args.get("email") or "").strip()[:MAX_ADDRESS]
    found = None
    if typed:
        wanted = addresses.normalize(typed) or typed.lower()
        with db.reading() as conn:
            user = find_by_email(conn, wanted, tenant)
            if user is not None:
                found = Found(
                    user.email,
                    str(Account(user).state),
                    user.created_at,
                    user.is_admin,
                    factors.has_second_factor(conn, user.tenant_id, user.id),
                )
    return pages.render(
        "admin/accounts.html", typed=typed, found=found, tenant=tenant, tenant_ids=known
    )
