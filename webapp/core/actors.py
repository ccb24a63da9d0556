"""Who did it: the `actor` written into the metadata of an operator's events."""

from __future__ import annotations

import getpass


def operator() -> str:
    """A person at a shell (`flask ...`): the operating-system account."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        name = "unknown"
    return f"cli:{name}"


def user(user_id: str) -> str:
    """A signed-in account (the operations console)."""
    return f"user:{user_id}"


def api_token(token_id: str) -> str:
    """A request of the HTTP API, by the id of its token (never the secret)."""
    return f"api-token:{token_id}"
