"""The CI rule for browser tests: required (REQUIRE_BROWSER=1, set by .ci/run)
means a missing browser fails the run; anywhere else it is a skip with a reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.conftest import browser_unavailable

ROOT = Path(__file__).resolve().parents[2]


def test_missing_browser_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match=r"REQUIRE_BROWSER=1 .*no Chromium at /x"):
        browser_unavailable("no Chromium at /x")


def test_missing_browser_skips_with_the_reason_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no Chromium at /x.*apt-get install chromium"):
        browser_unavailable("no Chromium at /x")


def test_ci_requires_the_browser() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export REQUIRE_BROWSER=1" in script
    assert "apt-get install -y -qq chromium chromium-driver" in script
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
