"""`flask users reset-factors EMAIL`: an operator removes every second factor
and recovery code of an account that lost them all. Recorded on the user's
stream with the operator as actor; the user is told by mail (outbox), so a
reset they did not ask for does not go unnoticed."""

from __future__ import annotations

from webapp.accounts import addresses, notices
from webapp.accounts.account import Account, Refusal
from webapp.accounts.factors import store
from webapp.accounts.stream import append_to
from webapp.accounts.users import find_by_email
from webapp.core import db
from webapp.tenants import DEFAULT_TENANT

FACTORS_RESET_MAIL = "factors-reset"  # outbox kind of the notice


class ResetError(LookupError):
    """No such account (the message says which address)."""


def reset_factors(address: str, actor: str, tenant_id: str = DEFAULT_TENANT) -> bool:
    """False when the account had no second factor (nothing appended, no mail)."""
    wanted = addresses.normalize(address.strip()) or address.strip().lower()
    with db.transaction() as conn:
        user = find_by_email(conn, wanted, tenant_id)
        decision = Account(user).reset_factors()
        if user is None or isinstance(decision, Refusal):
            raise ResetError(f"no account with the address {address!r} in tenant {tenant_id!r}")
        if not store.has_second_factor(conn, user.tenant_id, user.id):
            return False
        append_to(conn, user, decision, actor=actor)
        notices.record(
            conn,
            notices.user_of(conn, user.tenant_id, user.id),
            FACTORS_RESET_MAIL,
            "mail.factorsReset",
            "/profile",
        )
    return True
