"""Scraping `/metrics` in tests: the answer parsed with prometheus_client's
own parser, a sample's value by name and labels, and the change between two
scrapes."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


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
