"""Mail tests use the accounts' cheap argon2 and in-memory rate limits; the SMTP
server and private Redis fixtures live in tests/conftest.py."""

from tests.accounts.conftest import make_config  # noqa: F401
