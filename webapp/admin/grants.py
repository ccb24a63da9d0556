"""Who may enter the console: `user.admin-granted` / `user.admin-revoked` on the
user's own stream (actor in the metadata); the accounts' projection keeps
`users.is_admin` (webapp/accounts/projection.py)."""

from __future__ import annotations

from webapp.accounts import addresses
from webapp.accounts.account import Account, Refusal
from webapp.accounts.stream import append_to
from webapp.accounts.users import find_by_email
from webapp.core import db
from webapp.tenants import DEFAULT_TENANT


class GrantError(LookupError):
    """No such account (the message says which address)."""


def set_admin(address: str, admin: bool, actor: str, tenant_id: str = DEFAULT_TENANT) -> bool:
    """Grant (or revoke) the console; False when the account already was so
    (nothing appended). Raises GrantError for an unknown address."""
    wanted = addresses.normalize(address.strip()) or address.strip().lower()
    with db.transaction() as conn:
        user = find_by_email(conn, wanted, tenant_id)
        decision = Account(user).set_admin(admin)
        if user is None or isinstance(decision, Refusal):
            raise GrantError(f"no account with the address {address!r} in tenant {tenant_id!r}")
        return bool(append_to(conn, user, decision, actor=actor))
