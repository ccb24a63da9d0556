"""The app's password hasher and the checks every password command shares:
the current password, and the policy for a new one (sign-up, change, reset)."""

from __future__ import annotations

from argon2 import PasswordHasher
from flask import current_app

from webapp.accounts import passwords
from webapp.accounts.result import Result
from webapp.accounts.users import User
from webapp.core.config import Config


def config() -> Config:
    cfg: Config = current_app.config["APP_CONFIG"]
    return cfg


def hasher() -> PasswordHasher:
    cfg = config()
    return passwords.hasher(cfg.argon2_time_cost, cfg.argon2_memory_cost, cfg.argon2_parallelism)


def check_new_password(
    email: str, new: str, current_hash: str | None = None, field: str = "new_password"
) -> Result | None:
    """The error for a new password that breaks the policy (length, common list,
    the address, zxcvbn strength) or, given the stored hash, equals the current
    password; None when it is fine. For sign-up, password change and reset."""
    problem = passwords.policy_error(new, email, config().password_min_length)
    if problem:
        return Result.error(problem[0], field, **problem[1])
    if current_hash and passwords.verify_password(hasher(), current_hash, new):
        return Result.error("password.errors.sameAsCurrent", field)
    return None


def check_password(user: User, password: str) -> bool:
    return passwords.verify_password(hasher(), user.password_hash, password)
