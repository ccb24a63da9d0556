"""docs/operations.md "Monitoring" and docs/monitoring/: the alert rules are
valid Prometheus rules (promtool's check where it is installed, and our own
parse everywhere), and the rules, the Grafana dashboard and the metric table
name only metrics that exist; every metric that exists is in the table."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import yaml
from prometheus_client.metrics import MetricWrapperBase

from tests.support.metrics import scrape
from webapp.core.config import ROOT
from webapp.metrics import instruments

DOCS = ROOT / "docs"
RULES = DOCS / "monitoring" / "alerts.yml"
DASHBOARD = DOCS / "monitoring" / "grafana-dashboard.json"
NAME = re.compile(r"\bwebapp_[a-z0-9_]+\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def families(client) -> dict[str, str]:
    """Every metric family the service exports: name -> type."""
    out = {f.name: f.type for f in scrape(client).families}
    for value in vars(instruments).values():
        if isinstance(value, MetricWrapperBase):
            out.update({f.name: f.type for f in value.describe()})
    return out


def sample_names(client) -> set[str]:
    return {name + s for name, kind in families(client).items() for s in SUFFIXES[kind]}


def test_the_six_alert_rules_are_valid_and_use_metrics_that_exist(client):
    doc = yaml.safe_load(RULES.read_text())
    rules = [r for group in doc["groups"] for r in group["rules"]]
    assert [r["alert"] for r in rules] == [
        "WorkflowRunsFailing",
        "WorkflowTimerLate",
        "ProjectionLagGrowing",
        "MailOutboxBacklog",
        "NoSchedulerHeartbeat",
        "DatabaseNotWritable",
    ]
    known = sample_names(client)
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        used = set(NAME.findall(rule["expr"]))
        assert used and used <= known, (rule["alert"], used - known)
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
    promtool = shutil.which("promtool")
    if promtool:  # Debian's `prometheus` package ships it
        checked = subprocess.run(
            [promtool, "check", "rules", str(RULES)], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "SUCCESS: 5 rules found" in checked.stdout
    # The operations guide shows the same rules, word for word.
    assert RULES.read_text().split("groups:", 1)[1] in (DOCS / "operations.md").read_text()


def test_the_grafana_dashboard_uses_only_metrics_that_exist(client):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(dashboard["panels"]) >= 10
    known = sample_names(client)
    used = {name for e in exprs for name in NAME.findall(e)}
    assert used <= known, used - known
    # Every family the service exports is on some panel.
    assert {
        n
        for n in families(client)
        if not any(n + s in used for s in ("", "_total", "_bucket", "_count"))
    } == set()


def test_the_metric_table_lists_exactly_the_metrics_that_exist(client):
    guide = (DOCS / "operations.md").read_text()
    section = guide.split("## Monitoring", 1)[1].split("\n## ", 1)[0]
    listed = {m.group(1) for m in re.finditer(r"^\| `(webapp_[a-z0-9_]+)` \|", section, re.M)}
    exported = {
        name + ("_total" if kind == "counter" else "") for name, kind in families(client).items()
    }
    assert listed == exported
