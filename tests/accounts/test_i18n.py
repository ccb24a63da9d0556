"""English and German: complete catalogs, keys as message ids, choice of language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po

from tests.support.accounts import body, mails, register
from webapp.core.config import ROOT

TRANSLATIONS = ROOT / "webapp" / "translations"
# Keys other code and the browser tests rely on: they stay the message ids.
STABLE_KEYS = [
    "profile.title",
    *(
        f"profile.email.{k}"
        for k in ("title", "current", "new", "currentPassword", "submit", "success")
    ),
    *(
        f"profile.password.{k}"
        for k in ("title", "old", "new", "confirm", "submit", "success", "mismatch")
    ),
    *(
        f"profile.danger.{k}"
        for k in (
            "title",
            "explainer",
            "delete",
            "dialogTitle",
            "dialogDescription",
            "requested",
            "cancelDeletion",
            "cancelSuccess",
            "gracePeriodEnd",
        )
    ),
    "profile.errors.generic",
    "profile.errors.emailUnchanged",
    "user.errors.emailAlreadyExists",
    "auth.errors.invalidCredentials",
]


def _entries(messages: Any) -> dict[str, str]:
    """id -> text; a plural message (`duration.days`) by its first id, its forms
    joined by NUL (each must be there, with the same placeholders)."""
    out = {}
    for m in messages:
        if not m.id:
            continue
        plural = isinstance(m.id, (list, tuple))
        forms = list(m.string) if plural else [m.string]
        out[m.id[0] if plural else m.id] = "\x00".join(forms) if all(forms) else ""
    return out


def _catalog(lang: str) -> dict[str, str]:
    with (TRANSLATIONS / lang / "LC_MESSAGES" / "messages.po").open("rb") as fh:
        return _entries(read_po(fh))


# Where outcome keys are written as plain strings (not inside gettext calls).
COMMAND_MODULES = (
    "account",
    "result",
    "credentials",
    "registration",
    "change_email",
    "change_password",
    "reset",
    "signins",
    "language",
    "deletion",
    "restriction",
    "addresses",
    "passwords",
)


def _used_keys() -> set[str]:
    keys: set[str] = set()
    pattern = re.compile(r"""(?:_|gettext|required)\(\s*["']([a-z]+\.[A-Za-z.]+)["']""")
    for path in [*Path(ROOT / "templates").rglob("*.html"), *Path(ROOT / "webapp").rglob("*.py")]:
        keys |= set(pattern.findall(path.read_text()))
    keys |= set(
        re.findall(
            r'"((?:profile|auth|user|verify|revert|password|mail)\.[A-Za-z.]+)"',
            "\n".join(
                (ROOT / "webapp/accounts" / f"{name}.py").read_text() for name in COMMAND_MODULES
            ),
        )
    )
    return keys


def test_both_catalogs_are_complete_and_the_stable_keys_are_the_ids() -> None:
    en, de = _catalog("en"), _catalog("de")
    assert set(en) == set(de)
    assert all(en.values()) and all(de.values())
    assert set(STABLE_KEYS) <= set(en)
    # A mail names its keys' common part (accounts/notices.py): both must exist.
    used = {k for k in _used_keys() if not k.endswith(".")}
    mails = {k for k in used if k not in en and f"{k}.subject" in en}
    missing = {k for k in used - mails if k not in en}
    missing |= {f"{k}.body" for k in mails if f"{k}.body" not in en}
    assert not missing, missing
    for key in en:  # placeholders agree
        assert re.findall(r"%\(\w+\)s", en[key]) == re.findall(r"%\(\w+\)s", de[key]), key


def test_compiled_catalogs_match_the_sources() -> None:
    for lang in ("en", "de"):
        with (TRANSLATIONS / lang / "LC_MESSAGES" / "messages.mo").open("rb") as fh:
            compiled = _entries(read_mo(fh))
        assert compiled == _catalog(lang), f"run `pybabel compile -d webapp/translations` ({lang})"


def test_accept_language_picks_german(client: Any) -> None:
    html = client.get("/login", headers={"Accept-Language": "de-DE,de;q=0.9"}).get_data(
        as_text=True
    )
    assert (
        '<html lang="de">' in html and ">Anmelden</button>" in html and "Angemeldet bleiben" in html
    )
    html = client.get("/login", headers={"Accept-Language": "fr"}).get_data(as_text=True)
    assert ">Sign in</button>" in html


def test_mail_goes_out_in_the_language_of_registration(app: Any, client: Any, work: Any) -> None:
    client.get("/register", headers={"Accept-Language": "de"})
    from tests.support.web import csrf_token

    token = csrf_token(client, "/register")
    client.post(
        "/register",
        data={
            "csrf_token": token,
            "email": "ute@example.com",
            "password": "ein langes passwort hier",
            "confirm": "ein langes passwort hier",
        },
        headers={"Accept-Language": "de"},
    )
    work()
    sent = mails(app)
    assert sent[-1]["Subject"] == "Bestätigen Sie Ihre E-Mail-Adresse"
    assert "innerhalb von 2 Tagen" in body(sent[-1])  # the link's 48 hours (i18n.duration)
    assert register is not None
