"""The identity providers a person may sign in with, read from the environment
at start-up (docs/accounts.md, "Sign in with an identity provider").

    OIDC_<NAME>_ISSUER         any OpenID Connect provider, by its issuer URL
    OIDC_<NAME>_CLIENT_ID      (discovery at `<issuer>/.well-known/openid-configuration`)
    OIDC_<NAME>_CLIENT_SECRET
    OIDC_<NAME>_LABEL          optional: the name on its button (default: NAME)
    GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET   the Google preset (OpenID Connect)
    GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET   the GitHub preset (OAuth 2 and its REST API)
    GITHUB_URL, GITHUB_API_URL               optional: GitHub Enterprise Server

Several at once; a bad or incomplete setting raises `ConfigError` naming the
variable, so the app does not start half-configured. Only settings: discovery
and everything else that talks to a provider is webapp/accounts/identities."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

OIDC = "oidc"
GITHUB = "github"

GOOGLE_ISSUER = "https://accounts.google.com"
GITHUB_URL = "https://github.com"
GITHUB_API_URL = "https://api.github.com"

_NAME = re.compile(r"[A-Z][A-Z0-9]{0,31}")
_SUFFIXES = ("ISSUER", "CLIENT_ID", "CLIENT_SECRET", "LABEL")
LABEL_MAX = 40


class ProviderConfigError(ValueError):
    """A bad identity-provider setting (webapp.core.config re-raises it as ConfigError)."""


@dataclass(frozen=True)
class ProviderSettings:
    name: str  # lower case: in URLs and in the stored identity
    kind: str  # OIDC or GITHUB
    label: str
    client_id: str
    client_secret: str = field(repr=False)
    issuer: str = ""  # OIDC: the issuer URL, exactly as the provider states it
    web_url: str = ""  # GitHub: where people authorize
    api_url: str = ""  # GitHub: the REST API


def _url(env: Mapping[str, str], name: str, default: str = "") -> str:
    raw = (env.get(name) or default).strip()
    parts = urlsplit(raw)
    local = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and local):
        raise ProviderConfigError(
            f"{name} must be an https:// URL (http:// only on localhost), got {raw!r}"
        )
    if not parts.hostname or parts.query or parts.fragment:
        raise ProviderConfigError(f"{name} must be a URL without query or fragment, got {raw!r}")
    return raw


def _required(env: Mapping[str, str], name: str, why: str) -> str:
    value = (env.get(name) or "").strip()
    if not value:
        raise ProviderConfigError(f"{name} is required when {why} is set")
    if len(value) > 512 or any(ord(c) < 0x21 for c in value):
        raise ProviderConfigError(f"{name} must be at most 512 characters without spaces")
    return value


def _label(env: Mapping[str, str], name: str, default: str) -> str:
    label = (env.get(name) or "").strip() or default
    if len(label) > LABEL_MAX or any(ord(c) < 0x20 for c in label):
        raise ProviderConfigError(f"{name} must be at most {LABEL_MAX} characters, got {label!r}")
    return label


def _preset(env: Mapping[str, str], prefix: str) -> bool:
    return any(env.get(f"{prefix}_{s}") for s in ("CLIENT_ID", "CLIENT_SECRET"))


def from_env(env: Mapping[str, str]) -> tuple[ProviderSettings, ...]:
    """Every configured provider, the presets first, then OIDC_* by name."""
    found: list[ProviderSettings] = []
    if _preset(env, "GOOGLE"):
        found.append(
            ProviderSettings(
                "google",
                OIDC,
                "Google",
                _required(env, "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"),
                _required(env, "GOOGLE_CLIENT_SECRET", "GOOGLE_CLIENT_ID"),
                issuer=GOOGLE_ISSUER,
            )
        )
    if _preset(env, "GITHUB"):
        found.append(
            ProviderSettings(
                "github",
                GITHUB,
                "GitHub",
                _required(env, "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET"),
                _required(env, "GITHUB_CLIENT_SECRET", "GITHUB_CLIENT_ID"),
                web_url=_url(env, "GITHUB_URL", GITHUB_URL).rstrip("/"),
                api_url=_url(env, "GITHUB_API_URL", GITHUB_API_URL).rstrip("/"),
            )
        )
    names: set[str] = set()
    for key in sorted(env):
        if not key.startswith("OIDC_") or not env[key]:
            continue
        rest = key[len("OIDC_") :]
        suffix = next((s for s in _SUFFIXES if rest.endswith("_" + s)), None)
        name = rest[: -len(suffix) - 1] if suffix else ""
        if suffix is None or not _NAME.fullmatch(name):
            raise ProviderConfigError(
                f"{key} is not a provider setting: use OIDC_<NAME>_ISSUER, _CLIENT_ID, "
                "_CLIENT_SECRET or _LABEL, NAME in capitals and digits (at most 32)"
            )
        names.add(name)
    taken = {p.name for p in found}
    for name in sorted(names):
        prefix = f"OIDC_{name}"
        if name.lower() in taken:
            raise ProviderConfigError(
                f"{prefix}_ISSUER: the name {name} is the {name.title()} preset's; choose another"
            )
        issuer = _url(env, f"{prefix}_ISSUER") if env.get(f"{prefix}_ISSUER") else ""
        if not issuer:
            raise ProviderConfigError(f"{prefix}_ISSUER is required when {prefix}_* is set")
        found.append(
            ProviderSettings(
                name.lower(),
                OIDC,
                _label(env, f"{prefix}_LABEL", name.title()),
                _required(env, f"{prefix}_CLIENT_ID", f"{prefix}_ISSUER"),
                _required(env, f"{prefix}_CLIENT_SECRET", f"{prefix}_ISSUER"),
                issuer=issuer,  # compared with `iss` exactly, as OpenID Connect requires
            )
        )
    return tuple(found)
