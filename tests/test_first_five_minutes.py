"""README's "Your first five minutes", as a newcomer goes through it: every
command of the section (the `$ ` lines of its console blocks) is run here as
written, by a shell in a project directory of its own (`.venv`, `wsgi.py`,
`instance/`, `.env`), against this test's database and Redis; what the reader
does in the browser is done with the test client, and the worker's part by the
test's worker. `make run` itself is run by tests/test_dev_supervisor.py."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from tests import procs
from tests.support.accounts import login, register, user_row
from tests.support.web import csrf_token
from webapp.core import db
from webapp.core.config import ROOT
from webapp.eventstore import projections
from webapp.jobs import enqueue
from webapp.workflows.store.tables import workflow_runs

SECTION = "## Your first five minutes"
ADDRESS = "you@example.com"


def section_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    body = text[start : end if end != -1 else None]
    commands: list[str] = []
    in_console = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_console = not in_console and stripped == "```console"
        elif in_console and stripped.startswith("$ "):
            commands.append(stripped[2:])
    return commands


def docs_myflows() -> str:
    """The `myflows.py` block of docs/workflows.md, "Your first workflow"."""
    text = (ROOT / "docs" / "workflows.md").read_text()
    m = re.search(r"```python\n(# myflows\.py\n.*?)```", text, re.S)
    assert m, "docs/workflows.md has no myflows.py block"
    return m.group(1)


@pytest.fixture
def project(app: Any, tmp_path: Path, database_url: str, redis_url: str) -> Any:
    """A project directory as a clone has it, on the test's database, Redis and
    instance folder (the app's, so mails its worker writes land in `instance/mail`)."""
    cfg = app.config["APP_CONFIG"]
    assert cfg.instance_path == tmp_path / "instance"
    (tmp_path / ".venv").symlink_to(sys.prefix)
    # a copy, not a link: `flask --app wsgi` puts the folder of wsgi.py (the
    # project directory) on sys.path, which is how myflows.py is found
    (tmp_path / "wsgi.py").write_text((ROOT / "wsgi.py").read_text())
    env = procs.app_env(database_url, redis_url, cfg.instance_path, SECRET_KEY=cfg.secret_key)
    env.pop("WORKFLOW_MODULES", None)

    def run(command: str) -> str:
        out = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, f"{command}\n{out.stdout}\n{out.stderr}"
        return out.stdout

    return run


@pytest.fixture
def no_example_workflow() -> Any:
    yield
    if "order-follow-up" in {w.name for w in wf.registered()}:
        wf.unregister("order-follow-up")
    sys.modules.pop("myflows", None)


def test_every_command_of_the_first_five_minutes_works(
    app: Any,
    client: Any,
    work: Any,
    clock: Any,
    project: Any,
    tmp_path: Path,
    no_example_workflow: Any,
) -> None:
    commands = section_commands()
    assert commands[0] == "make run"
    ran: list[str] = []

    def step(word: str) -> str:
        """Run the section's next command, which must contain `word`."""
        command = commands[len(ran) + 1]
        assert word in command, f"README's next command is {command!r}, the test expected {word!r}"
        ran.append(command)
        return project(command)

    # 2. Create an account (the browser); the worker writes the mail.
    assert register(client, ADDRESS).status_code == 200
    work()
    # 3. The link, read from the newest .eml by the README's command, verifies.
    link = step("instance/mail/").strip()
    assert link.startswith("http://localhost/verify-email/"), link
    path = link.removeprefix("http://localhost")
    assert "Verify email address" in client.get(path).get_data(as_text=True)
    assert client.post(path, data={"csrf_token": csrf_token(client)}).status_code == 200
    assert user_row(ADDRESS).email_verified
    work()
    # 4. Sign in. 5. Operator.
    assert login(client, ADDRESS).status_code == 302
    assert f"{ADDRESS} is now an admin" in step("grant-admin")
    # 6. The console, and the sign-up's workflow in it, completed.
    runs = client.get("/admin/runs")
    assert runs.status_code == 200
    with db.reading() as conn:
        statuses = dict(
            conn.execute(select(workflow_runs.c.workflow_name, workflow_runs.c.status)).all()
        )
    assert statuses.get("email-verification-registered") == "completed", statuses
    assert "email-verification-registered" in runs.get_data(as_text=True)

    # 7. The example workflow: its module in the project directory, named in .env.
    (tmp_path / "myflows.py").write_text(docs_myflows())
    step("WORKFLOW_MODULES=myflows")
    assert (tmp_path / ".env").read_text() == "WORKFLOW_MODULES=myflows\n"
    # make run again: every process loads the module (this test's worker too)
    sys.path.insert(0, str(tmp_path))
    try:
        __import__("myflows")
    finally:
        sys.path.remove(str(tmp_path))
    projections.ensure_cursors()
    assert "appended order.placed" in step("events append order.placed")
    work()
    assert "suspended" in step("workflows runs")  # in its five seconds' wait
    clock.advance(timedelta(seconds=6))
    enqueue("worker.tasks.run_job", "resume-due-runs", "default", clock.now().isoformat())
    work()
    assert "completed" in project(ran[-1])  # the same list, once more
    assert ran == commands[1:], "a command of the section is not run by this test"
