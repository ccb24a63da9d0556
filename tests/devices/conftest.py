"""The devices tests run with cheap argon2 and in-memory rate limits; their
helpers are tests/support's (and tests/devices/helpers.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import CHEAP


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    return CHEAP
