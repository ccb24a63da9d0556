"""Every module, file and link the user docs name exists as named.

README.md and docs/*.md name modules by their dotted paths (`webapp.publish`,
`worker.run_worker`, `webapp.workflows.testing.WorkflowTest`) and files by
their paths (`webapp/core/db.py`). A reader copies them into `import` lines,
`python -m` commands and editors, so each must work as written:

- a dotted path imports, or is an attribute (a function, a class) of a
  module that imports. A module reached only as an attribute of its package
  (`webapp.workflows.match` is `webapp.workflows.definition.match`, which
  the package exposes as `wf.match`) fails: `import webapp.workflows.match`
  does not work;
- a path under one of the project's folders exists in the checkout;
- a relative link leads to a file, and its `#anchor` to a heading of it
  (GitHub's slug of the heading).

Checked: inline code spans, and every line of fenced blocks (commands and
log lines shown in `console` and `text` blocks too).
"""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import pytest

from webapp.core.config import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```")
SPAN = re.compile(r"(`+)(.+?)\1")
MODULE = re.compile(r"(?<![\w.:/-])((?:webapp|worker)(?:\.[A-Za-z_]\w*)+)")
FOLDERS = ("webapp", "worker", "bench", "tests", "docs", "migrations", "templates", "static")
FILE = re.compile(r"(?<![\w./-])((?:" + "|".join(FOLDERS) + r")/[\w./-]*\w)")
# Paths a doc names that are not in a checkout, and why.
NOT_IN_CHECKOUT = {
    "tests/x/test_y.py": "a placeholder in README's `pytest` example",
    "bench/.venv-dbos": "the venv `make bench-anchors` creates (gitignored)",
}


def code(path: Path) -> list[tuple[int, str]]:
    """(line number, code) for every inline code span and fenced line."""
    out: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif fenced:
            out.append((number, line))
        else:
            out.extend((number, m.group(2)) for m in SPAN.finditer(line))
    return out


def mentions(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    found = {
        (f"{doc.relative_to(ROOT)}:{number}", name.rstrip("."))
        for doc in DOCS
        for number, text in code(doc)
        for name in pattern.findall(text)
    }
    return sorted(found)


def unresolved(dotted: str) -> str | None:
    """Why `dotted` does not work as written, or None when it does."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj: object = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name + ".").startswith(exc.name + "."):
                continue  # this prefix is no module: try a shorter one
            raise
        for depth, attr in enumerate(parts[cut:], cut + 1):
            if not hasattr(obj, attr):
                return f"{'.'.join(parts[: depth - 1])} has no attribute {attr!r}"
            obj = getattr(obj, attr)
            if isinstance(obj, types.ModuleType):
                return f"a module not importable by this path: it is {obj.__name__}"
        return None
    return "no module of this name"


MODULES = mentions(MODULE)
# Paths a doc names on purpose that a checkout does not hold are not checked.
FILES = [(where, path) for where, path in mentions(FILE) if path not in NOT_IN_CHECKOUT]


def test_the_docs_name_modules_and_files():
    # A pattern that stopped matching would make both checks pass vacuously.
    assert len(MODULES) > 20 and len(FILES) > 20 and len(LINKS) > 20
    assert any(where.startswith("README.md:") for where, _ in MODULES)


@pytest.mark.parametrize(("where", "dotted"), MODULES, ids=[f"{w} {d}" for w, d in MODULES])
def test_every_dotted_path_a_doc_names_imports_as_written(where: str, dotted: str):
    assert unresolved(dotted) is None, f"{where}: `{dotted}`: {unresolved(dotted)}"


@pytest.mark.parametrize(("where", "path"), FILES, ids=[f"{w} {p}" for w, p in FILES])
def test_every_file_a_doc_names_exists(where: str, path: str):
    assert (ROOT / path).exists(), f"{where}: `{path}` does not exist"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(path: Path) -> set[str]:
    out: set[str] = set()
    fenced = False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


LINKS = sorted(
    {
        (f"{doc.relative_to(ROOT)}:{number}", doc, target)
        for doc in [*DOCS, ROOT / "bench" / "README.md"]
        for number, line in enumerate(doc.read_text().splitlines(), 1)
        for target in LINK.findall(line)
        if not target.startswith(("http://", "https://", "mailto:"))
    },
    key=lambda link: (link[0], link[2]),
)


@pytest.mark.parametrize(("where", "doc", "target"), LINKS, ids=[f"{w} {t}" for w, _, t in LINKS])
def test_every_link_between_the_docs_leads_somewhere(where: str, doc: Path, target: str):
    path, _, anchor = target.partition("#")
    file = (doc.parent / path) if path else doc
    assert file.exists(), f"{where}: {target}: no such file"
    if anchor and file.suffix == ".md":
        assert anchor in headings(file), f"{where}: {target}: no such heading"


def test_a_module_reached_only_through_its_package_is_refused():
    assert unresolved("webapp.workflows.definition.match") is None
    assert unresolved("webapp.workflows.testing.WorkflowTest") is None
    assert "webapp.workflows.definition.match" in str(unresolved("webapp.workflows.match"))
    assert "no attribute 'nope'" in str(unresolved("webapp.publish.nope"))
    assert unresolved("webapp.nope") == "webapp has no attribute 'nope'"
