"""WORKFLOW_MODULES: the application's own workflow modules, living outside
webapp/, are loaded by every process: the web app factory, the RQ worker, the
scheduler and the `flask` CLI (real subprocesses for the last three)."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from redis import Redis
from sqlalchemy import select

from tests import procs
from webapp import app_modules, create_app
from webapp.core import db
from webapp.core.config import Config, ConfigError
from webapp.eventstore import projections
from webapp.publish import publish
from webapp.workflows.store.tables import workflow_runs
from webapp.workflows.triggers import registry

# One module registers at import, the other through its own register(app).
FLOWS = textwrap.dedent(
    """
    from webapp.workflows import register
    import webapp.workflows as wf

    greet = register(wf.workflow(
        "NAME-greet",
        on="NAME.placed",
        steps=[wf.compute("hello", lambda ctx: "hi " + ctx.trigger.aggregate_id),
               wf.ret(lambda ctx: ctx["hello"])],
    ))
    """
)
NIGHTLY = textwrap.dedent(
    """
    import webapp.workflows as wf
    from webapp.workflows import register as register_workflow

    nightly = wf.workflow("NAME-nightly", cron="0 3 * * *", steps=[wf.ret(1)])
    calls = []

    def register(app):
        calls.append(app)
        register_workflow(app, nightly)
    """
)


@pytest.fixture
def user_modules(tmp_path):
    """Two modules in a directory outside the project, on sys.path for this test."""
    tag = f"u{uuid.uuid4().hex[:8]}"
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / f"{tag}_flows.py").write_text(FLOWS.replace("NAME", tag))
    (pkg / f"{tag}_nightly.py").write_text(NIGHTLY.replace("NAME", tag))
    (pkg / f"{tag}_broken.py").write_text("import no_such_module_anywhere\n")
    sys.path.insert(0, str(pkg))
    yield tag, pkg
    sys.path.remove(str(pkg))
    for name in list(sys.modules):
        if name.startswith(tag):
            del sys.modules[name]
    for wf_name in (f"{tag}-greet", f"{tag}-nightly"):
        registry.unregister(wf_name)


def test_setting_is_a_validated_list_of_module_names(tmp_path):
    base = {"INSTANCE_PATH": str(tmp_path)}
    cfg = Config.from_env({**base, "WORKFLOW_MODULES": " myapp.flows, billing.flows ,"})
    assert cfg.workflow_modules == ("myapp.flows", "billing.flows")
    assert Config.from_env(base).workflow_modules == ()
    with pytest.raises(ConfigError, match="WORKFLOW_MODULES.*'my-app.flows'"):
        Config.from_env({**base, "WORKFLOW_MODULES": "my-app.flows"})


def test_web_app_factory_loads_modules_and_calls_register(app, make_config, user_modules, work):
    tag, _ = user_modules
    web = create_app(make_config(workflow_modules=(f"{tag}_flows", f"{tag}_nightly")))
    assert registry.get(f"{tag}-greet") is not None
    assert registry.get(f"{tag}-nightly") is not None
    assert sys.modules[f"{tag}_nightly"].calls == [web]
    with web.app_context():
        projections.ensure_cursors()
        publish(f"{tag}.placed", "order", "o-1", {})
        work()
        with db.reading() as conn:
            row = conn.execute(
                select(workflow_runs).where(workflow_runs.c.workflow_name == f"{tag}-greet")
            ).one()
    assert row.status == "completed"


def test_a_module_that_fails_to_import_stops_start_up_naming_it(make_config, user_modules, redis):
    tag, _ = user_modules
    with pytest.raises(ConfigError, match=f"WORKFLOW_MODULES: cannot import '{tag}_broken'"):
        create_app(make_config(workflow_modules=(f"{tag}_broken",)))
    with pytest.raises(ConfigError, match="cannot import 'no_such_pkg.flows'"):
        app_modules.import_modules(["no_such_pkg.flows"])


def _env(database_url: str, redis_url: str, tmp_path: Path, pkg: Path, modules: str) -> dict:
    return procs.app_env(
        database_url, redis_url, tmp_path / "instance", pkg, WORKFLOW_MODULES=modules
    )


def test_cli_process_loads_modules(app, database_url, redis_url, tmp_path, user_modules):
    tag, pkg = user_modules
    env = _env(database_url, redis_url, tmp_path, pkg, f"{tag}_flows,{tag}_nightly")
    jobs = procs.flask(env, "jobs", "list")
    assert jobs.returncode == 0, jobs.stderr
    assert f"workflow-{tag}-nightly" in jobs.stdout  # the cron workflow's job
    status = procs.flask(env, "projections", "status")
    assert f"workflow-{tag}-greet " in status.stdout  # registered, so no "(not registered)"
    assert "(not registered)" not in status.stdout.split(f"workflow-{tag}-greet")[1].split("\n")[0]
    broken = procs.flask({**env, "WORKFLOW_MODULES": f"{tag}_broken"}, "jobs", "list")
    assert broken.returncode != 0
    assert f"configuration error: WORKFLOW_MODULES: cannot import '{tag}_broken'" in broken.stderr


def test_worker_process_runs_a_user_workflow(app, database_url, redis_url, tmp_path, user_modules):
    tag, pkg = user_modules
    env = _env(database_url, redis_url, tmp_path, pkg, f"{tag}_flows")
    worker = procs.worker(env, tmp_path / "worker.log")
    try:
        # The worker mounts the trigger (cursor at the head) when it starts.
        def mounted() -> bool:
            with db.reading() as conn:
                return any(r["name"] == f"workflow-{tag}-greet" for r in projections.status(conn))

        procs.until(mounted, what="trigger cursor created by the worker")
        publish(f"{tag}.placed", "order", "o-7", {})

        def completed() -> object:
            with db.reading() as conn:
                return conn.execute(
                    select(workflow_runs.c.results).where(
                        workflow_runs.c.workflow_name == f"{tag}-greet",
                        workflow_runs.c.status == "completed",
                    )
                ).first()

        procs.until(completed, what="run completed by the worker subprocess")
        assert worker.alive()
    finally:
        worker.stop()


def test_scheduler_process_schedules_a_user_cron_workflow(
    app, database_url, redis_url, tmp_path, user_modules
):
    tag, pkg = user_modules
    env = _env(database_url, redis_url, tmp_path, pkg, f"{tag}_nightly")
    sched = procs.scheduler(env, tmp_path / "scheduler.log")
    r = Redis.from_url(redis_url)
    try:
        procs.until(
            lambda: r.zscore("rq:scheduler:scheduled_jobs", f"cron-workflow-{tag}-nightly"),
            what="cron entry of the user's workflow",
        )
        assert sched.alive()
    finally:
        sched.stop()
    bad = procs.scheduler({**env, "WORKFLOW_MODULES": f"{tag}_broken"}, tmp_path / "bad.log")
    try:
        assert bad.popen.wait(60) != 0
        assert f"WORKFLOW_MODULES: cannot import '{tag}_broken'" in bad.output()
    finally:
        bad.stop()  # closes its log file
