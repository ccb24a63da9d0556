"""Every workflow example in docs/workflows.md has a harness test there (in
"Testing your workflows", or right after the example), and those tests run
here as written: the blocks that define the workflows and the blocks of
tests are executed from the document (the extraction of
tests/test_docs_examples.py), then each test function is called, with the
`workflow_test` fixture when it asks for it."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import pytest

import webapp.workflows as wf
from tests.test_docs_examples import Block, of
from webapp.config import ROOT

GUIDE = ROOT / "docs" / "workflows.md"
TESTS_MARK = "from webapp.workflows.testing import"


def definitions() -> list[Block]:
    return [b for b in of("python", GUIDE) if "wf.workflow(" in b.code]


def harness_blocks() -> list[Block]:
    return [b for b in of("python", GUIDE) if TESTS_MARK in b.code]


def documented_tests() -> list[str]:
    return [n for b in harness_blocks() for n in re.findall(r"^def (test_\w+)\(", b.code, re.M)]


def run_blocks(blocks: list[Block]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "docs_workflows_tests"}
    for b in blocks:
        exec(compile(b.code, f"{GUIDE.name}:{b.line}", "exec"), namespace)
    return namespace


@pytest.fixture
def documented() -> Iterator[dict[str, Any]]:
    """The document's workflows and tests in one namespace; the workflows it
    registers are unregistered afterwards."""
    before = {w.name for w in wf.registered()}
    try:
        yield run_blocks(definitions() + harness_blocks())
    finally:
        for w in wf.registered():
            if w.name not in before:
                wf.unregister(w.name)


def test_every_documented_workflow_has_a_harness_test(documented: dict[str, Any]) -> None:
    defined = {name for name, v in documented.items() if isinstance(v, wf.Workflow)}
    calls = re.findall(
        r"(?:WorkflowTest|workflow_test)\(([^)]*)\)", "".join(b.code for b in harness_blocks())
    )
    tested = {arg.strip() for args in calls for arg in args.split(",")}
    assert {"order_follow_up", "verification_reminder", "customer_sync"} <= defined  # found
    assert defined <= tested, f"workflows in docs/workflows.md without a test: {defined - tested}"


@pytest.mark.parametrize("name", documented_tests())
def test_the_documented_test_passes(
    name: str, documented: dict[str, Any], workflow_test: Any
) -> None:
    fn = documented[name]
    wanted = inspect.signature(fn).parameters
    fn(**({"workflow_test": workflow_test} if "workflow_test" in wanted else {}))
