"""Health for every process: `/readyz` answers 503 naming what is missing
(database, Redis, migrations at head), and a worker's health port turns 503
when its resume loop hangs, and 200 again once the loop turns."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import httpx

import webapp.workflows as wf
from tests import procs
from tests.support.workflows import emit, only_run
from webapp import create_app
from webapp.core.migrate import upgrade
from webapp.health import liveness
from webapp.metrics.guard import Guard
from webapp.workflows.dispatch import resume_loop
from webapp.workflows.dispatch import signals as timers
from worker import dev, dev_health


def test_readyz_answers_ok_when_database_redis_and_migrations_are(client):
    resp = client.get("/readyz")
    assert resp.status_code == 200
    assert resp.json == {"status": "ok", "database": "ok", "migrations": "ok", "redis": "ok"}
    assert resp.headers["Cache-Control"] == "no-store"


def test_readyz_names_a_schema_behind_its_migrations(make_config, redis, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'behind.db'}"
    upgrade(url, "0007_admin")
    resp = create_app(make_config(database_url=url)).test_client().get("/readyz")
    assert resp.status_code == 503
    assert resp.json["migrations"] == "behind"
    assert resp.json["database"] == "ok"
    assert resp.headers["Retry-After"] == "5"


def test_readyz_names_redis_when_it_does_not_answer(make_config, database_url):
    web = create_app(make_config(redis_url="redis://127.0.0.1:1/0"))
    resp = web.test_client().get("/readyz")
    assert resp.status_code == 503
    assert resp.json == {
        "status": "unavailable",
        "database": "ok",
        "migrations": "ok",
        "redis": "unreachable",
    }


def _health(port: int) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code


def test_the_health_port_turns_unhealthy_while_the_resume_loop_hangs(
    app, use_workflow, work, redis
):
    gate = threading.Event()
    use_workflow(
        wf.workflow(
            "hangs",
            on="hang.start",
            awaits={"go": "hang.go"},
            steps=[
                wf.wait_for_event("go", event="go", timeout="PT10M"),
                wf.compute("block", lambda ctx: gate.wait(60)),  # the loop runs this step
                wf.ret(1),
            ],
        )
    )
    emit("hang.start", {})
    work()
    assert only_run("hangs").status == "suspended"
    stop, loop = resume_loop.start_thread(app)
    server = liveness.serve("127.0.0.1", 0, ("resume",), 2.0, Guard((), ""))
    port = server.server_address[1]
    try:
        procs.until(lambda: redis.exists(timers.ALIVE_KEY), what="the resume loop is alive")
        procs.until(lambda: _health(port) == 200, what="healthy while the loop turns")
        emit("hang.go", {}, aggregate_id="g1")  # wakes the run: the loop claims it and hangs
        procs.until(lambda: _health(port) == 503, what="unhealthy once the loop hangs")
        body = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
        assert body["status"] == "stuck" and body["loops"]["resume"] > 2.0
        gate.set()
        procs.until(lambda: _health(port) == 200, what="healthy again once the loop turns")
        procs.until(lambda: only_run("hangs").status == "completed", what="the run completed")
    finally:
        gate.set()
        stop.set()
        loop.join(timeout=30)
        server.shutdown()
        server.server_close()
    assert not loop.is_alive()


def test_the_health_port_serves_this_hosts_counters_only_to_allowed_scrapers(app):
    liveness.tick("worker", "resume")  # this process's heartbeat, in the host's directory
    closed = liveness.serve("127.0.0.1", 0, (), 2.0, Guard((), ""))
    open_ = liveness.serve("127.0.0.1", 0, (), 2.0, Guard(("127.0.0.1",), ""))
    try:
        refused = httpx.get(f"http://127.0.0.1:{closed.server_address[1]}/metrics", timeout=5)
        served = httpx.get(f"http://127.0.0.1:{open_.server_address[1]}/metrics", timeout=5)
    finally:
        for server in (closed, open_):
            server.shutdown()
            server.server_close()
    assert refused.status_code == 404
    assert served.status_code == 200
    assert 'webapp_heartbeat_timestamp_seconds{loop="resume",process="worker"}' in served.text


def test_make_runs_supervisor_stops_a_child_whose_health_port_says_stuck(make_config, tmp_path):
    stuck = liveness.serve("127.0.0.1", 0, ("resume",), 0.0, Guard((), ""))  # never turned
    port = str(stuck.server_address[1])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    child = dev.Child("worker", lambda: sleeper)
    child.start()
    env = {"WORKER_HEALTH_PORT": port, "SCHEDULER_HEALTH_PORT": "0"}
    probe = dev_health.Probe(make_config(), env)
    try:
        probe.watch([child], 0.0)  # first 503: a strike, not yet a restart
        assert sleeper.poll() is None
        probe.watch([child], 1.0)  # too soon to ask again
        assert sleeper.poll() is None
        probe.watch([child], dev_health.PROBE_EVERY_S)  # second 503 in a row: stopped
        assert sleeper.wait(timeout=30) != 0
        child.watch(child.started_at + 1)  # and the supervisor starts it again
        assert child.restart_at is not None
    finally:
        stuck.shutdown()
        stuck.server_close()
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
