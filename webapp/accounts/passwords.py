"""Password hashing (argon2id) and the password policy.

Policy (NIST SP 800-63B style): a minimum length (PASSWORD_MIN_LENGTH, default
15), up to MAX_LENGTH characters, no composition rules, never truncated, not in
the shipped list of common passwords, not the account's email address.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MAX_LENGTH = 1024  # at least 128 must be allowed; the cap only bounds hashing work
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
    return None
