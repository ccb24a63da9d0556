"""Mail tests use the accounts' cheap argon2 and in-memory rate limits; the SMTP
server and private Redis fixtures live in tests/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import CHEAP


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    return CHEAP
