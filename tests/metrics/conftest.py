"""Settings for the metrics tests: cheap argon2 and in-memory rate limits (as
the accounts tests have them) and no caching of the scrape-time gauges."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.accounts import CHEAP


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    return {**CHEAP, "metrics_cache_seconds": 0}
