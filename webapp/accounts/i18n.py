"""Languages (Flask-Babel): English and German.

Message ids are stable i18n keys (e.g. `profile.password.success`),
and English is a catalog like any other (`translations/en`), so a wording change
never changes an id and a missing text is caught by tests instead of shipping a key.
The user's stored choice wins, else the browser's Accept-Language, else English.
"""

from __future__ import annotations

from typing import Any

from babel.support import NullTranslations
from flask import Flask, has_request_context, request
from flask_babel import Babel, get_locale, get_translations
from flask_login import current_user

from webapp.config import ROOT

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


def init_app(app: Flask) -> None:
    app.config["BABEL_TRANSLATION_DIRECTORIES"] = str(TRANSLATIONS)
    app.config["BABEL_DEFAULT_LOCALE"] = "en"
    Babel(app, locale_selector=select_locale)
    app.jinja_env.install_gettext_callables(  # type: ignore[attr-defined]
        template_gettext, template_ngettext, newstyle=True
    )

    @app.context_processor
    def _language() -> dict[str, object]:
        return {"html_lang": current_language(), "language_names": LANGUAGE_NAMES}
