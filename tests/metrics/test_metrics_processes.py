"""`/metrics` across processes: the runs execute in a real worker process, the
sign-ins in this (web) process, and one scrape of this process's `/metrics`
shows exactly both, parsed with prometheus_client's parser. Every exported
label value is then checked: never a run id, an address or a tenant id."""

from __future__ import annotations

import re
import socket
import uuid
from collections import Counter
from pathlib import Path

import httpx
from flask import Flask
from sqlalchemy import select

from tests import procs
from tests.support.accounts import PASSWORD, login, register
from tests.support.metrics import Scrape, delta, scrape
from webapp.core import db
from webapp.eventstore import projections
from webapp.eventstore.tables import tenants
from webapp.health import liveness
from webapp.jobs.queue import QUEUES
from webapp.metrics import multiprocess_dir
from webapp.publish import publish
from webapp.workflows.store.tables import workflow_runs

MODULE = "tests.metrics.flows"
FLOWS = ("metrics-ok", "metrics-boom", "metrics-waiting")
ADDRESS = "grace@example.com"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def statuses() -> Counter[tuple[str, str]]:
    with db.reading() as conn:
        rows = conn.execute(select(workflow_runs.c.workflow_name, workflow_runs.c.status))
        return Counter((r.workflow_name, r.status) for r in rows)


def mounted() -> bool:
    with db.reading() as conn:
        names = {r["name"] for r in projections.status(conn)}
    return {f"workflow-{name}" for name in FLOWS} <= names


def settled_verification() -> bool:
    """The registration's verification run waits for its link (so it is in `before`)."""
    return any(
        name.startswith("email-verification") and status == "suspended"
        for (name, status) in statuses()
    )


def test_a_known_sequence_shows_exactly_its_counts_across_two_processes(
    app: Flask, client, database_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = procs.app_env(database_url, redis_url, tmp_path / "instance", WORKFLOW_MODULES=MODULE)
    worker = procs.worker(env, tmp_path / "worker.log")
    try:
        procs.until(mounted, what="the worker mounted the test workflows")
        assert register(client, ADDRESS).status_code == 200
        procs.until(settled_verification, what="the verification run waits for its link")
        before = scrape(client)

        # In this process: three sign-ins and one refused.
        for _ in range(3):
            assert login(app.test_client(), ADDRESS).status_code == 302
        assert login(app.test_client(), ADDRESS, password=PASSWORD + "?").status_code == 422
        # In the worker: two runs complete, one fails, one waits.
        for event_type, key in (
            ("metrics.ok", "o1"),
            ("metrics.ok", "o2"),
            ("metrics.boom", "b1"),
            ("metrics.wait", "w1"),
        ):
            publish(event_type, "thing", key, {})
        wanted = {
            ("metrics-ok", "completed"): 2,
            ("metrics-boom", "failed"): 1,
            ("metrics-waiting", "suspended"): 1,
        }
        procs.until(
            lambda: {k: v for k, v in statuses().items() if k[0] in FLOWS} == wanted,
            what=f"runs settled as {wanted}",
        )

        def counted() -> Scrape | None:
            s = scrape(client)
            done = delta(s, before, "webapp_workflow_runs_failed_total", workflow="metrics-boom")
            return (
                s
                if done and delta(s, before, "webapp_workflow_runs_open", status="suspended")
                else None
            )

        after = procs.until(counted, what="the worker's counters in this process's scrape")
        assert worker.alive(), worker.output()
    finally:
        worker.stop()

    d = {
        (name, flow): delta(after, before, f"webapp_workflow_runs_{name}_total", workflow=flow)
        for name in ("started", "completed", "failed", "cancelled")
        for flow in FLOWS
    }
    assert {k: v for k, v in d.items() if v} == {
        ("started", "metrics-ok"): 2,
        ("completed", "metrics-ok"): 2,
        ("started", "metrics-boom"): 1,
        ("failed", "metrics-boom"): 1,
        ("started", "metrics-waiting"): 1,
    }
    assert delta(after, before, "webapp_workflow_runs_open", status="suspended") == 1
    assert delta(after, before, "webapp_workflow_runs_open", status="running") == 0
    assert delta(after, before, "webapp_signins_total", outcome="succeeded") == 3
    assert delta(after, before, "webapp_signins_total", outcome="refused") == 1
    # The worker counted in its own files, which this process read.
    assert (multiprocess_dir() / f"counter_{worker.popen.pid}.db").exists()

    assert_no_personal_or_unbounded_labels(after)


def assert_no_personal_or_unbounded_labels(s: Scrape) -> None:
    with db.reading() as conn:
        run_ids = set(conn.execute(select(workflow_runs.c.run_id)).scalars())
        tenant_ids = set(conn.execute(select(tenants.c.id)).scalars())
    assert run_ids and tenant_ids
    for sample in s.samples:
        for label, value in sample.labels.items():
            where = f"{sample.name}{{{label}={value!r}}}"
            assert value not in run_ids, where
            assert not UUID.search(value), where
            assert "@" not in value and ADDRESS not in value, where
            assert "tenant" not in label, where
            # The one RQ queue is called "default", like the default tenant.
            if not (label == "queue" and value in QUEUES):
                assert value not in tenant_ids, where
    assert str(uuid.uuid4()) not in s.text


def test_the_worker_and_the_scheduler_serve_their_health_ports(
    app: Flask, database_url: str, redis_url: str, tmp_path: Path
) -> None:
    ports = {"worker": free_port(), "scheduler": free_port()}
    env = procs.app_env(
        database_url,
        redis_url,
        tmp_path / "instance",
        WORKER_HEALTH_PORT=str(ports["worker"]),
        SCHEDULER_HEALTH_PORT=str(ports["scheduler"]),
    )
    started = [
        procs.worker(env, tmp_path / "worker.log"),
        procs.scheduler(env, tmp_path / "scheduler.log"),
    ]
    try:
        for process, port in ports.items():
            answer = procs.until(lambda port=port: _get(port, "/healthz"), what=f"{process} health")
            assert answer.status_code == 200, answer.text
            assert set(answer.json()["loops"]) == set(liveness.WATCHED[process])
            served = Scrape(_get(port, "/metrics").text)  # loopback is in METRICS_ALLOW
            for loop in liveness.WATCHED[process]:
                beat = served.value(
                    "webapp_heartbeat_timestamp_seconds", process=process, loop=loop
                )
                assert beat > 0, (process, loop)
        assert all(p.alive() for p in started), [p.output() for p in started]
    finally:
        for p in started:
            p.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    except httpx.HTTPError:
        return None  # not listening yet
