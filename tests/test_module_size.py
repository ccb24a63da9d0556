"""Size is a smell, not a rule: a module holds one concept, whatever its
length; one of more than 400 lines says in its docstring why it is one
concept (a paragraph starting "One concept:"), so a reader can tell a whole
concept from a file that grew."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 400


def unexplained(source: str) -> bool:
    """A module longer than LIMIT lines whose docstring does not say why it is one concept."""
    if source.count("\n") <= LIMIT:
        return False
    doc = ast.get_docstring(ast.parse(source)) or ""
    return "One concept:" not in doc


def test_the_check_tells_an_explained_long_module_from_an_unexplained_one():
    body = "x = 1\n" * (LIMIT + 1)
    assert unexplained('"""Rates."""\n' + body)
    assert not unexplained('"""Rates.\n\nOne concept: the rate limiter, whole."""\n' + body)
    assert not unexplained('"""Short."""\n' + "x = 1\n" * 10)


@pytest.mark.parametrize(
    "path",
    sorted(
        p.relative_to(ROOT).as_posix()
        for d in ("webapp", "worker")
        for p in (ROOT / d).rglob("*.py")
    ),
)
def test_a_long_module_says_why_it_is_one_concept(path: str):
    assert not unexplained((ROOT / path).read_text()), (
        f"{path} has more than {LIMIT} lines: split it by concept, or say in its "
        'docstring why it is one ("One concept: ...")'
    )
