"""What the error pattern looks like to a browser and a screen reader, and the
axe-core audit. No fixtures here (see conftest.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

# Pinned and vendored (tests/browser/vendor/README.md): works in a fresh clone, offline.
AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
FAILING_IMPACTS = ("serious", "critical")

PREFIX = {"en": "Error:", "de": "Fehler:"}
TITLE = {"en": "There is a problem", "de": "Es gibt ein Problem"}


def summary(scope: Any) -> Any:
    return scope.locator("[data-error-summary]")


def expect_errors(
    page: Any,
    scope: Any,
    errors: list[tuple[str, str]],
    hints: dict[str, str] | None = None,
    lang: str = "en",
) -> None:
    """`errors` = (field label, message) in field order. The summary lists exactly
    these, each a link to its field; each field shows its message directly above
    the input, prefixed "Error:" for screen readers, and is described by its hint
    and its message; the page title starts with "Error: "."""
    hints = hints or {}
    box = summary(scope)
    expect(box).to_have_count(1)
    expect(box).to_have_attribute("role", "alert")
    expect(box.get_by_role("heading")).to_have_text(TITLE[lang])
    expect(box.locator("li")).to_have_text([text for _, text in errors])
    expect(page).to_have_title(re.compile(rf"^{PREFIX[lang]} \S"))
    for label, text in errors:
        field = scope.get_by_label(label, exact=True)
        field_id = field.get_attribute("id")
        expect(box.get_by_role("link", name=text)).to_have_attribute("href", f"#{field_id}")
        expect(field).to_have_attribute("aria-invalid", "true")
        message = page.locator(f"#{field_id}-error")
        expect(message).to_have_text(f"{PREFIX[lang]} {text}")
        expect(message.locator(".visually-hidden")).to_have_text(PREFIX[lang])
        # Directly above the input (after label and hint), not somewhere else.
        assert message.evaluate("el => el.nextElementSibling.id") == field_id
        hint = hints.get(label)
        described = f"{hint} {PREFIX[lang]} {text}" if hint else f"{PREFIX[lang]} {text}"
        expect(field).to_have_accessible_description(described)
    # Nothing else on the page claims to be in error.
    invalid = scope.locator("[aria-invalid=true]")
    expect(invalid).to_have_count(len(errors))


def expect_links_move_focus(scope: Any, errors: list[tuple[str, str]]) -> None:
    """Each summary link takes the keyboard to its field (in the order listed)."""
    box = summary(scope)
    for label, text in errors:
        box.get_by_role("link", name=text).click()
        expect(scope.get_by_label(label, exact=True)).to_be_focused()


def expect_no_errors(page: Any, scope: Any, lang: str = "en") -> None:
    expect(summary(scope)).to_have_count(0)
    expect(scope.locator("[aria-invalid=true]")).to_have_count(0)
    # The script syncs the title after the swap: wait for it like any other change.
    expect(page).not_to_have_title(re.compile(rf"^{PREFIX[lang]}"))


def audit(page: Any, state: str) -> None:
    """axe-core over the whole page as it is now: no serious or critical violation.
    The page must come from a `bypass_csp=True` context (the script is injected)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """tags => axe.run(document, {
            runOnly: {type: "tag", values: tags},
            resultTypes: ["violations"],
        })""",
        AXE_TAGS,
    )
    bad = [v for v in result["violations"] if v["impact"] in FAILING_IMPACTS]
    report = [
        {
            "rule": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"]][:5],
        }
        for v in bad
    ]
    assert not bad, f"axe-core, {state}:\n{json.dumps(report, indent=1)}"
