"""Password hashing (argon2id) and the password policy.

Policy (NIST SP 800-63B style): a minimum length (PASSWORD_MIN_LENGTH, default
15), up to MAX_LENGTH characters, no composition rules, never truncated, not in
the shipped list of common passwords, not the account's email address, and hard
enough to guess by zxcvbn's estimate (score MIN_SCORE of 0-4, the address as a
known input), so `aaaaaaaaaaaaaaa`, `123456789012345` or `passwordpassword`
are refused with a reason.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from zxcvbn import zxcvbn

MAX_LENGTH = 1024  # at least 128 must be allowed; the cap only bounds hashing work
MIN_SCORE = 3  # zxcvbn: "safely unguessable: moderate protection from offline attacks"
# zxcvbn's cost grows with the length; what makes a password weak shows in its
# first characters, and a longer one that starts strong is strong.
ESTIMATE_CHARS = 72  # also zxcvbn's own default maximum
# What zxcvbn found, per kind of pattern, as our own (translated) reason.
WEAK_REASONS = {
    "repeat": "password.errors.weakRepeat",
    "sequence": "password.errors.weakSequence",
    "spatial": "password.errors.weakKeyboard",
    "date": "password.errors.weakDate",
    "dictionary": "password.errors.weakWords",
}
WEAK = "password.errors.weak"
COMMON_PASSWORDS = Path(__file__).parent / "data" / "common-passwords.txt"


def hasher(time_cost: int, memory_cost: int, parallelism: int) -> PasswordHasher:
    return PasswordHasher(
        time_cost=time_cost, memory_cost=memory_cost, parallelism=parallelism, type=Type.ID
    )


def hash_password(ph: PasswordHasher, password: str) -> str:
    return ph.hash(password)


def verify_password(ph: PasswordHasher, stored_hash: str, password: str) -> bool:
    try:
        return ph.verify(stored_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(ph: PasswordHasher, stored_hash: str) -> bool:
    try:
        return ph.check_needs_rehash(stored_hash)
    except InvalidHashError:
        return True


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    with COMMON_PASSWORDS.open(encoding="utf-8") as fh:
        return frozenset(line.strip().lower() for line in fh if line.strip())


def policy_error(password: str, email: str, min_length: int) -> tuple[str, dict[str, int]] | None:
    """The i18n key (and its parameters) of the first rule the password breaks."""
    if len(password) < min_length:
        return "password.errors.tooShort", {"min": min_length}
    if len(password) > MAX_LENGTH:
        return "password.errors.tooLong", {"max": MAX_LENGTH}
    if password.lower() in common_passwords():
        return "password.errors.common", {}
    if email and password.strip().lower() == email.strip().lower():
        return "password.errors.sameAsEmail", {}
    return weakness(password, email)


def weakness(password: str, email: str = "") -> tuple[str, dict[str, int]] | None:
    """Why zxcvbn finds the password easy to guess (the key of the pattern that
    covers most of it), or None when it scores at least MIN_SCORE."""
    inputs = [email, email.partition("@")[0]] if email else []
    result = zxcvbn(password[:ESTIMATE_CHARS], user_inputs=inputs)
    if result["score"] >= MIN_SCORE:
        return None
    matches = [m for m in result["sequence"] if m.get("pattern") in WEAK_REASONS]
    if not matches:
        return WEAK, {}
    widest = max(matches, key=lambda m: len(m.get("token", "")))
    return WEAK_REASONS[widest["pattern"]], {}
