"""The account's language (the profile's *Language*): mails and pages use it."""

from __future__ import annotations

from webapp.accounts import events as ev
from webapp.accounts.registration import LANGUAGES
from webapp.accounts.result import Result
from webapp.accounts.stream import RowChange, change
from webapp.accounts.users import User

SAVED = "profile.account.languageSaved"


def change_language(user: User, language: str) -> Result:
    if language not in LANGUAGES:
        return Result.error("profile.account.unknownLanguage", "language")
    if language == user.language:
        return Result(True, SAVED)

    return change(user, lambda account: account.change_language(language), Result(True, SAVED))


ROW_CHANGES: dict[str, RowChange] = {
    ev.LANGUAGE_CHANGED: lambda conn, e: {"language": e.payload.get("language")}
}
