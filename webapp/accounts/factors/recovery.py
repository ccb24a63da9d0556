"""Recovery codes: 10 single-use codes, shown once, stored hashed.

Each code is 16 characters from a 32-letter alphabet without look-alikes
(80 random bits), shown in groups of four. They are hashed with argon2id,
salted per code, at no more than OWASP's minimum cost (t=2, m=19 MiB, p=1;
less when ARGON2_* asks less): NIST SP 800-63B asks look-up secrets below 112
bits to be stored with a salted password-hashing scheme, so a copy of the
database alone cannot be searched for them. A keyed hash (HMAC) would be
cheaper to check, but its key would have to live outside the database and
rotating it (SECRET_KEY) would silently void every code a person printed;
argon2 has no key to rotate. The cost is bounded: a check compares with the
unused codes of one account only (at most 10), after the password, under the
second-factor rate limit."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher

from webapp.accounts import passwords
from webapp.core.config import Config

COUNT = 10
LENGTH = 16
ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no i, l, o, 0, 1
GROUP = 4
MAX_INPUT = 40  # longer input is refused before any hashing


def hasher(cfg: Config) -> PasswordHasher:
    return passwords.hasher(min(cfg.argon2_time_cost, 2), min(cfg.argon2_memory_cost, 19456), 1)


def new_codes() -> list[str]:
    return ["".join(secrets.choice(ALPHABET) for _ in range(LENGTH)) for _ in range(COUNT)]


def shown(code: str) -> str:
    return "-".join(code[i : i + GROUP] for i in range(0, len(code), GROUP))


def normalized(raw: str) -> str | None:
    """The code as stored (lower case, no spaces or dashes), or None when it
    cannot be one."""
    if len(raw) > MAX_INPUT:
        return None
    code = raw.strip().lower().replace("-", "").replace(" ", "")
    if len(code) != LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def hash_code(ph: PasswordHasher, code: str) -> str:
    return ph.hash(code)


def matches(ph: PasswordHasher, stored: str, code: str) -> bool:
    return passwords.verify_password(ph, stored, code)


def text_file(codes: list[str], heading: str) -> str:
    """The `.txt` download: a heading line, then one code a line."""
    return heading + "\n\n" + "\n".join(shown(c) for c in codes) + "\n"
