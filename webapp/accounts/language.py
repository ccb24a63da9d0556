"""The account's language (the profile's *Language*): mails and pages use it."""

from __future__ import annotations

from webapp import db
from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal
from webapp.accounts.registration import LANGUAGES
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import RowChange, append_to, fresh
from webapp.accounts.users import User

SAVED = "profile.account.languageSaved"


def change_language(user: User, language: str) -> Result:
    if language not in LANGUAGES:
        return Result.error("profile.account.unknownLanguage", "language")
    if language == user.language:
        return Result(True, SAVED)

    def attempt() -> Result:
        with db.transaction() as conn:
            row = fresh(conn, user)
            decision = Account(row).change_language(language)
            if isinstance(decision, Refusal):
                return Result.refused(decision)
            append_to(conn, row, decision)
        return Result(True, SAVED)

    return retry_on_conflict(attempt)


ROW_CHANGES: dict[str, RowChange] = {
    ev.LANGUAGE_CHANGED: lambda conn, e: {"language": e.payload.get("language")}
}
