"""The accounts tests run with cheap argon2 (one test asks for the production
parameters) and in-memory rate limits; their helpers are tests/support's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import CHEAP


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    return CHEAP
