"""Languages (Flask-Babel): English and German.

Message ids are stable i18n keys (e.g. `profile.password.success`),
and English is a catalog like any other (`translations/en`), so a wording change
never changes an id and a missing text is caught by tests instead of shipping a key.
The user's stored choice wins, else the browser's Accept-Language, else English.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from babel.support import NullTranslations
from flask import Flask, has_request_context, request
from flask_babel import Babel, format_decimal, get_locale, get_translations
from flask_login import current_user

from webapp.core.config import ROOT

LANGUAGES = ("en", "de")
LANGUAGE_NAMES = {"en": "English", "de": "Deutsch"}
TRANSLATIONS = ROOT / "webapp" / "translations"


def select_locale() -> str | None:
    if not has_request_context():
        return None  # worker: callers use force_locale(user.language)
    user = current_user
    if user and user.is_authenticated and getattr(user, "language", None) in LANGUAGES:
        return str(user.language)
    return request.accept_languages.best_match(LANGUAGES) or "en"


def current_language() -> str:
    loc = get_locale()
    return loc.language if loc is not None and loc.language in LANGUAGES else "en"


# The loaded catalog per language, for the templates' `_()` (a page calls it
# some 35 times). Flask-Babel caches catalogs too, but finds one through three
# request-context lookups and a locale-to-string conversion per message.
_catalogs: dict[tuple[str, str | None], NullTranslations] = {}


def _catalog() -> NullTranslations:
    locale = get_locale()
    if locale is None:  # outside a request: Flask-Babel's answer (no catalog)
        return get_translations()
    key = (locale.language, locale.territory)
    catalog = _catalogs.get(key)
    if catalog is None:
        catalog = _catalogs[key] = get_translations()
    return catalog


def template_gettext(string: str, **variables: Any) -> str:
    """Flask-Babel's `gettext`, with the catalog looked up once per language."""
    text = _catalog().ugettext(string)
    return text % variables if variables else text


def template_ngettext(singular: str, plural: str, num: int, **variables: Any) -> str:
    variables.setdefault("num", num)
    return _catalog().ungettext(singular, plural, num) % variables


# The units a duration is stated in, largest first: (message id, its plural id,
# seconds). Plural messages (`ngettext`): each language's catalog has its forms.
_UNITS = (
    ("duration.days", "duration.days.plural", 86400),
    ("duration.hours", "duration.hours.plural", 3600),
    ("duration.minutes", "duration.minutes.plural", 60),
    ("duration.seconds", "duration.seconds.plural", 1),
)
_UNIT_SECONDS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}


def duration(amount: int | timedelta, unit: str = "seconds") -> str:
    """`amount` (`unit`s, or a timedelta) in words in the current language, with
    its plural: in the largest unit that measures it whole, so it is always
    exact. 30 s is "30 seconds", 60 "1 minute", 90 "90 seconds", 5400 "90
    minutes", 3600 "1 hour", 172800 "2 days"; 0 is stated in `unit`. The
    German forms are dative ("nach 2 Tagen", "innerhalb von 1 Stunde"): a
    message puts a duration after a preposition that takes the dative. Also
    the templates' `duration` filter (`reauth_seconds|duration`,
    `grace_days|duration("days")`) and what `notices.record` makes of a
    timedelta parameter."""
    total = (
        amount.total_seconds() if isinstance(amount, timedelta) else amount * _UNIT_SECONDS[unit]
    )
    if total < 0 or total != int(total):
        raise ValueError(f"not a duration in whole seconds: {amount!r}")
    seconds = int(total)
    for singular, plural, size in _UNITS:
        if seconds % size == 0 and (seconds or size == _UNIT_SECONDS[unit]):
            count = seconds // size
            return str(
                _catalog().ungettext(singular, plural, count) % {"num": format_decimal(count)}
            )
    raise AssertionError("a whole number of seconds is measured by the last unit")


def init_app(app: Flask) -> None:
    app.config["BABEL_TRANSLATION_DIRECTORIES"] = str(TRANSLATIONS)
    app.config["BABEL_DEFAULT_LOCALE"] = "en"
    Babel(app, locale_selector=select_locale)
    app.jinja_env.install_gettext_callables(  # type: ignore[attr-defined]
        template_gettext, template_ngettext, newstyle=True
    )
    app.jinja_env.filters["duration"] = duration

    @app.context_processor
    def _language() -> dict[str, object]:
        return {"html_lang": current_language(), "language_names": LANGUAGE_NAMES}
