"""Every workflow example in docs/workflows.md has a harness test there (in
"Testing your workflows", or right after the example), and those tests run
exactly as a reader copies them: every file block of the guides (a block whose
first line is `# myflows.py`, `# test_myflows.py`, ...) is written as that
file, verbatim, into an empty directory, and pytest runs the test modules
there in a process of its own, as `.venv/bin/pytest test_myflows.py` does in
the reader's project directory (the project's pytest settings, every warning
an error; the `workflow_test` fixture comes from the installed plugin). A
name a block uses without defining or importing it fails its test."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_docs_examples import DOCS, Block, files, of, write_files
from webapp.core.config import ROOT

GUIDE = ROOT / "docs" / "workflows.md"


def doc_test_modules() -> dict[str, Block]:
    return {n: b for n, b in files(DOCS).items() if n.startswith("test_")}


def documented_tests() -> list[str]:
    return [
        n
        for b in doc_test_modules().values()
        for n in re.findall(r"^def (test_\w+)\(", b.code, re.M)
    ]


def workflows_defined(block: Block) -> set[str]:
    """The names a module block binds, at its top level, to a `wf.workflow(...)`
    (registered or not)."""
    out: set[str] = set()
    for node in ast.parse(block.code).body:
        if isinstance(node, ast.Assign) and "wf.workflow(" in ast.unparse(node.value):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


@dataclass(frozen=True)
class Outcome:
    passed: bool
    detail: str


@dataclass(frozen=True)
class Report:
    returncode: int
    output: str
    tests: dict[str, Outcome]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The guides' files as copied, and one pytest run of their test modules."""
    folder = tmp_path_factory.mktemp("docs-project")
    named = files(DOCS)
    write_files(named, folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "WORKFLOW_"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),  # the project's settings, as in its directory
            "--rootdir",
            str(folder),
            "-p",
            "no:cacheprovider",
            "--junitxml",
            str(folder / "report.xml"),
            *sorted(doc_test_modules()),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    tests: dict[str, Outcome] = {}
    if (folder / "report.xml").exists():
        for case in ET.parse(folder / "report.xml").getroot().iter("testcase"):
            problems = [c for c in case if c.tag in ("failure", "error", "skipped")]
            detail = "\n".join((c.get("message") or "") + "\n" + (c.text or "") for c in problems)
            tests[case.get("name", "")] = Outcome(not problems, detail)
    return Report(done.returncode, output, tests)


def test_the_guides_test_modules_pass_under_pytest(report: Report) -> None:
    assert documented_tests(), "no `# test_*.py` blocks found"
    assert report.returncode == 0, report.output[-6000:]
    assert set(report.tests) == set(documented_tests()), report.output[-3000:]


@pytest.mark.parametrize("name", documented_tests())
def test_the_documented_test_passes(name: str, report: Report) -> None:
    assert name in report.tests, f"{name} did not run:\n{report.output[-3000:]}"
    assert report.tests[name].passed, report.tests[name].detail[-4000:]


def test_every_documented_workflow_has_a_harness_test() -> None:
    modules = {n: b for n, b in files([GUIDE]).items() if not n.startswith("test_")}
    defined = {w for b in modules.values() for w in workflows_defined(b)}
    harness = "".join(b.code for b in doc_test_modules().values())
    calls = re.findall(r"(?:WorkflowTest|workflow_test)\(([^)]*)\)", harness)
    tested = {arg.strip() for args in calls for arg in args.split(",")}
    assert {"order_follow_up", "verification_reminder", "customer_sync"} <= defined  # found
    assert defined <= tested, f"workflows in docs/workflows.md without a test: {defined - tested}"


def test_every_workflow_module_of_the_guide_is_a_file() -> None:
    """A block that defines a workflow others test is a module they can import."""
    loose = [
        b.line
        for b in of("python", GUIDE)
        if re.search(r"^\w+ = wf\.(register\(\s*wf\.)?workflow\(", b.code, re.M)
        and b not in files([GUIDE]).values()
    ]
    assert not loose, f"docs/workflows.md: blocks defining workflows without `# name.py`: {loose}"


def test_the_files_are_written_as_copied(tmp_path: Path) -> None:
    named = files(DOCS)
    write_files(named, tmp_path)
    for name, b in named.items():
        assert (tmp_path / name).read_text() == b.code + "\n"
