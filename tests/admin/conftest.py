"""The console's tests run like the accounts tests: cheap argon2 and in-memory
rate limits; their helpers are tests/support's (`admin`, `plain`, `post`).
The workflow fixture `wf` is the workflow tests' own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import CHEAP


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    return CHEAP
