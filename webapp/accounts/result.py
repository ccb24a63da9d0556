"""What an account command answers: a `Result` (expected failures are values
carrying an i18n key; exceptions are bugs or infrastructure), and the retry
every command runs its transaction under."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from webapp.accounts.account import GENERIC, Refusal
from webapp.eventstore import VersionConflict

__all__ = ["CONCURRENT_CHANGE", "GENERIC", "INVALID_CREDENTIALS", "Result", "retry_on_conflict"]

INVALID_CREDENTIALS = "auth.errors.invalidCredentials"
CONCURRENT_CHANGE = "profile.errors.concurrentChange"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    ok: bool
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    field: str | None = None  # the form field the error belongs to
    user_id: str | None = None
    session_token: str | None = None
    status: int | None = None  # the HTTP status when it is not the usual one

    @classmethod
    def error(cls, key: str, field: str | None = None, **params: Any) -> Result:
        return cls(False, key, params, field)

    @classmethod
    def refused(cls, refusal: Refusal) -> Result:
        return cls(False, refusal.key, {}, refusal.field)


def retry_on_conflict(attempt: Callable[[], Result]) -> Result:
    """Run a command's transaction; when it meets a concurrent change to the same
    account (another window, a double click), run it once more on the fresh
    state, and if that conflicts too answer 409 instead of failing."""
    for _ in range(2):
        try:
            return attempt()
        except VersionConflict as exc:
            log.info("account command met a concurrent change", extra={"stream": str(exc)})
    return Result(False, CONCURRENT_CHANGE, status=409)
