"""Fixtures for the metrics tests: cheap argon2 and in-memory rate limits (as
the accounts tests have them), no caching of the scrape-time gauges, and a
scrape of `/metrics` parsed with prometheus_client's own parser."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


@pytest.fixture
def make_config(make_config: Callable[..., Any]) -> Callable[..., Any]:
    def make(**overrides: Any) -> Any:
        overrides.setdefault("argon2_time_cost", 1)
        overrides.setdefault("argon2_memory_cost", 1024)
        overrides.setdefault("argon2_parallelism", 1)
        overrides.setdefault("ratelimit_storage", "memory://")
        overrides.setdefault("metrics_cache_seconds", 0)
        return make_config(**overrides)

    return make


class Scrape:
    """One answer of /metrics: its samples, and a value by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.families = list(text_string_to_metric_families(text))
        self.samples: list[Sample] = [s for family in self.families for s in family.samples]

    def value(self, name: str, **labels: str) -> float:
        """The sample's value (0 when it is not exported)."""
        for s in self.samples:
            if s.name == name and s.labels == labels:
                return s.value
        return 0.0


def scrape(client: FlaskClient, **kwargs: Any) -> Scrape:
    resp = client.get("/metrics", **kwargs)
    assert resp.status_code == 200, resp.status_code
    assert resp.headers["Content-Type"].startswith("text/plain; version=")
    return Scrape(resp.get_data(as_text=True))


def delta(after: Scrape, before: Scrape, name: str, **labels: str) -> float:
    return after.value(name, **labels) - before.value(name, **labels)


# The workflow tests' fixture, for the tests here that register a workflow.
from tests.workflows.conftest import use_workflow  # noqa: E402, F401
