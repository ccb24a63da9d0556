"""The API's tests: tokens made as `flask api-tokens create` makes them, and
requests with them (helpers in tests/support/api.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import CHEAP


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    return CHEAP
