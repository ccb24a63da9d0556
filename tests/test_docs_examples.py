"""Every code example in README.md and docs/*.md runs here, so the docs cannot
drift from the code.

Fenced blocks must carry an info string:
- `python`: executed, the blocks of one document in order and in one namespace,
  inside an app context on a clean database;
- `sh`: every line is a `flask --app wsgi ...` command, run through the app's
  CLI and expected to succeed; any other shell block must be listed in
  `RUN_ELSEWHERE` with the test that runs it;
- `console` / `text`: shown only (transcripts, placeholders, diagrams, output).
Any other (or no) info string fails the suite: a new example is either run or
explicitly marked as not runnable.
"""

from __future__ import annotations

import re
import shlex
import sys
import textwrap
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

import webapp.workflows as wf
from webapp import create_app, db
from webapp.config import ROOT
from webapp.eventstore import projections
from webapp.jobs import enqueue
from webapp.workflows.store.tables import workflow_runs

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("python", "sh")
# jinja: template fragments, shown only; the macros they use are pinned by
# tests/accounts/test_forms.py and the browser tests. yaml: Prometheus
# configuration; the alert rules are checked by tests/metrics/test_monitoring_docs.py.
SHOWN = ("console", "text", "jinja", "yaml")
FENCE = re.compile(r"^(\s*)```(.*)$")
FLASK = (["flask", "--app", "wsgi"], [".venv/bin/flask", "--app", "wsgi"])
# Shell blocks that are not flask commands, by a text they contain: the test
# (file, function) that runs them.
RUN_ELSEWHERE = {
    "openssl dgst": (
        "tests/workflows/test_cli_hooks_cron.py",
        "test_the_docs_openssl_curl_example_signs_a_request_we_accept",
    ),
}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    info: str
    code: str


def blocks(path: Path) -> list[Block]:
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
            code = textwrap.dedent("\n".join(lines[i + 1 : end]))
            out.append(Block(path, i + 1, m.group(2).strip(), code))
            i = end
        i += 1
    return out


def of(kind: str, path: Path) -> list[Block]:
    return [b for b in blocks(path) if b.info == kind]


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


def test_every_block_is_run_or_marked_as_shown():
    unmarked = [
        f"{b.path.relative_to(ROOT)}:{b.line} ```{b.info}"
        for path in DOCS
        for b in blocks(path)
        if b.info not in RUN + SHOWN
    ]
    assert not unmarked, f"mark these blocks python/sh (run) or console/text (shown): {unmarked}"
    assert sum(len(of("python", p)) for p in DOCS) >= 4  # the extractor finds them


def flask_args(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    for prefix in FLASK:
        if words[: len(prefix)] == prefix:
            return words[len(prefix) :]
    raise AssertionError(f"sh blocks hold flask commands only (mark others console): {line}")


def sh_lines(block: Block) -> list[str]:
    return [ln for ln in block.code.splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture
def own_workflows():
    """Workflows a document registers are unregistered afterwards."""
    before = {w.name for w in wf.registered()}
    yield
    for w in wf.registered():
        if w.name not in before:
            wf.unregister(w.name)


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_python_blocks_run(path, app, own_workflows):
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem}"}
    for b in of("python", path):
        try:
            exec(compile(b.code, f"{path.name}:{b.line}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{path.relative_to(ROOT)}:{b.line} failed: {exc!r}") from exc


def is_flask_block(block: Block) -> bool:
    return all(any(ln.startswith(p[0] + " ") for p in FLASK) for ln in sh_lines(block))


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_sh_blocks_run(path, app, runner):
    for b in of("sh", path):
        if not is_flask_block(b):
            where = [v for k, v in RUN_ELSEWHERE.items() if k in b.code]
            assert where, (
                f"{path.relative_to(ROOT)}:{b.line}: not flask commands and not in RUN_ELSEWHERE"
            )
            test_file, test_name = where[0]
            assert f"def {test_name}(" in (ROOT / test_file).read_text()
            continue
        for line in sh_lines(b):
            res = runner.invoke(args=flask_args(line))
            assert res.exit_code == 0, f"{path.relative_to(ROOT)}:{b.line}: {line}\n{res.output}"


def test_your_first_workflow_end_to_end(tmp_path, make_config, redis, app, work, clock):
    """The tutorial as a user follows it: the module from the docs in a file of
    its own outside webapp/, WORKFLOW_MODULES, the CLI event, the run completes."""
    guide = ROOT / "docs" / "workflows.md"
    module = of("python", guide)[0]
    assert module.code.startswith("# myflows.py")
    (tmp_path / "myflows.py").write_text(module.code)
    sys.path.insert(0, str(tmp_path))
    try:
        mine = create_app(make_config(workflow_modules=("myflows",)))
        with mine.app_context():
            projections.ensure_cursors()
            publish_line, runs_line = (sh_lines(b)[0] for b in of("sh", guide)[:2])
            cli = mine.test_cli_runner()
            assert cli.invoke(args=flask_args(publish_line)).exit_code == 0
            work()
            assert "suspended" in cli.invoke(args=flask_args(runs_line)).output
            clock.advance(timedelta(seconds=6))
            enqueue("worker.tasks.run_job", "resume-due-runs", "default", clock.now().isoformat())
            work()
            listing = cli.invoke(args=flask_args(runs_line)).output
            assert "completed" in listing
            run_id = next(w for w in listing.split() if len(w) == 36)
            shown = cli.invoke(args=["workflows", "show", run_id]).output
            assert "workflow.run-completed" in shown
            assert "workflow order-follow-up v1  status completed" in shown
            assert (
                'results: {"cool-off": null, "return": {"order": "42", "total": 1200}, "total": 1200}'
                in shown
            )
            with db.reading() as conn:
                results = conn.execute(
                    select(workflow_runs.c.results).where(workflow_runs.c.run_id == run_id)
                ).scalar_one()
            assert results["return"] == {"order": "42", "total": 1200}
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("myflows", None)
        wf.unregister("order-follow-up")
