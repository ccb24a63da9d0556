"""Every code example in README.md and docs/*.md runs here, so the docs cannot
drift from the code.

Fenced blocks must carry an info string:
- `python`: executed as a reader copies it: each block on its own, in a fresh
  namespace (a name it uses must be defined or imported in it), in document
  order, inside an app context on a clean database. A block whose first line
  names a file (`# myflows.py`) is that file: the document's file blocks are
  importable by their module names, as they are in the reader's project
  directory, and its test modules (`# test_myflows.py`) are run under pytest,
  in a process of their own, by tests/workflows/test_docs_workflows_harness.py;
- `sh`: every line is a `flask --app wsgi ...` command, run through the app's
  CLI and expected to succeed; any other shell block must be listed in
  `RUN_ELSEWHERE` with the test that runs it;
- `console` / `text`: shown only (transcripts, placeholders, diagrams, output);
  a flask command in them must still name a command the CLI has, with options
  it takes.
Any other (or no) info string fails the suite: a new example is either run or
explicitly marked as not runnable.
"""

from __future__ import annotations

import builtins
import dis
import re
import shlex
import sys
import textwrap
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import click
import pytest
from sqlalchemy import select

import webapp.workflows as wf
from webapp import create_app
from webapp.core import db
from webapp.core.config import ROOT
from webapp.eventstore import projections
from webapp.jobs import enqueue
from webapp.workflows.store.tables import workflow_runs

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("python", "sh")
# jinja: template fragments, shown only; the macros they use are pinned by
# tests/accounts/test_forms.py and the browser tests. yaml: Prometheus
# configuration; the alert rules are checked by tests/metrics/test_monitoring_docs.py.
# ini: PgBouncer's configuration; tests/test_pgbouncer.py runs a PgBouncer with it.
SHOWN = ("console", "text", "jinja", "yaml", "ini")
FENCE = re.compile(r"^(\s*)```(.*)$")
FLASK = (["flask", "--app", "wsgi"], [".venv/bin/flask", "--app", "wsgi"])
# Shell blocks that are not flask commands, by a text they contain: the test
# (file, function) that runs them.
RUN_ELSEWHERE = {
    "openssl dgst": (
        "tests/workflows/test_cli_hooks_cron.py",
        "test_the_docs_openssl_curl_example_signs_a_request_we_accept",
    ),
    "$API/api/v1/": (
        "tests/api/test_api_docs.py",
        "test_the_curl_examples_run_against_a_live_server",
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


FILE = re.compile(r"# (\w+)\.py")


def file_name(block: Block) -> str | None:
    """`myflows.py` for a block whose first line is `# myflows.py`, else None."""
    first = block.code.split("\n", 1)[0].strip()
    m = FILE.fullmatch(first)
    return f"{m.group(1)}.py" if m else None


def files(paths: Iterable[Path]) -> dict[str, Block]:
    """The python blocks that are files (`# name.py`), by file name."""
    out: dict[str, Block] = {}
    for path in paths:
        for b in of("python", path):
            name = file_name(b)
            if name is None:
                continue
            assert name not in out, f"{name} is two blocks: {out[name].line} and {b.line}"
            out[name] = b
    return out


def write_files(named: dict[str, Block], folder: Path) -> None:
    for name, b in named.items():
        (folder / name).write_text(b.code + "\n")


@contextmanager
def importable(named: dict[str, Block], folder: Path) -> Iterator[None]:
    """The file blocks written to `folder` and importable by their module
    names while the context lasts; forgotten (sys.path, sys.modules) after."""
    modules = [name.removesuffix(".py") for name in named]
    write_files(named, folder)
    for m in modules:
        sys.modules.pop(m, None)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for m in modules:
            sys.modules.pop(m, None)


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


def unresolved(code: types.CodeType, namespace: dict[str, object]) -> set[str]:
    """Global names that `code` (functions not called yet included) reads and
    neither `namespace` nor the builtins hold: a NameError waiting to happen."""
    loads = {
        i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }
    stored = {i.argval for i in dis.get_instructions(code) if i.opname == "STORE_NAME"}
    missing = {n for n in loads - stored if n not in namespace and not hasattr(builtins, n)}
    for inner in code.co_consts:
        if isinstance(inner, types.CodeType):
            missing |= unresolved(inner, namespace)
    return missing


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_python_blocks_run(path, app, own_workflows, tmp_path):
    """Each block alone, in a namespace of its own: a block that uses a name
    only an earlier block defines fails here (NameError), as it would for a
    reader who copies it; so does a function of the block that would raise
    one when called."""
    with importable(files([path]), tmp_path):
        for b in of("python", path):
            where = f"{path.relative_to(ROOT)}:{b.line}"
            namespace: dict[str, object] = {"__name__": f"docs_{path.stem}_{b.line}"}
            code = compile(b.code, f"{path.name}:{b.line}", "exec")
            try:
                exec(code, namespace)
            except Exception as exc:
                raise AssertionError(f"{where} failed: {exc!r}") from exc
            missing = unresolved(code, namespace)
            assert not missing, f"{where} uses names it neither defines nor imports: {missing}"


def test_every_block_with_tests_is_a_test_module():
    """A block that defines tests is a file `test_*.py`, so the harness test
    runs it under pytest as written."""
    loose = [
        f"{b.path.relative_to(ROOT)}:{b.line}"
        for path in DOCS
        for b in of("python", path)
        if re.search(r"^def test_", b.code, re.M) and not (file_name(b) or "").startswith("test_")
    ]
    assert not loose, f"start these blocks with a `# test_<name>.py` line: {loose}"


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


# Shown commands may leave out `--app wsgi` (flask finds wsgi.py in the project directory).
SHOWN_FLASK = (*FLASK, ["flask"], [".venv/bin/flask"])


def shown_flask_lines() -> list[tuple[Block, str]]:
    """The flask commands of the shown-only blocks (transcripts, command lists)."""
    out = []
    for path in DOCS:
        for b in blocks(path):
            if b.info not in SHOWN:
                continue
            for raw in b.code.splitlines():
                line = raw.strip().removeprefix("$ ")
                if any(line.startswith(" ".join(p) + " ") for p in SHOWN_FLASK):
                    out.append((b, line))
    return out


def test_shown_flask_commands_and_their_options_exist(app):
    """A shown command (not run: it names placeholders, a run id, a file) is
    still one the CLI has, with options it takes: copied with real values, it
    runs."""
    assert len(shown_flask_lines()) >= 40  # the extractor finds them
    for b, line in shown_flask_lines():
        where = f"{b.path.relative_to(ROOT)}:{b.line}: {line}"
        words = shlex.split(line.replace("<", " <"), comments=True)
        words = next(words[len(p) :] for p in SHOWN_FLASK if words[: len(p)] == p)
        command: click.Command = app.cli
        while isinstance(command, click.Group) and words and words[0] in command.commands:
            command = command.commands[words.pop(0)]
        if isinstance(command, click.Group) and words and "|" in words[0]:  # a|b: either
            alternatives = set(words[0].split("|"))
            assert alternatives <= set(command.commands), f"{where}: no such command"
            continue
        assert not isinstance(command, click.Group), f"{where}: no such command"
        takes = {opt for param in command.params for opt in param.opts} | {"--help"}
        given = {
            part.strip("[]").split("=")[0]
            for word in words
            for part in word.split("|")
            if part.strip("[]").startswith("--")
        }
        assert given <= takes, f"{where}: {command.name} takes no {given - takes}"


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
