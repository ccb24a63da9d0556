"""Real Chromium (Debian's /usr/bin/chromium) driving the app served in a thread.

CI rule: `.ci/run` exports REQUIRE_BROWSER=1, and there a missing browser FAILS
the browser tests; anywhere else they are skipped with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import pytest

from tests.browser.live import serving
from tests.support.accounts import CHEAP

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 10_000  # a step that takes longer is a failure, not a slow pass


@pytest.fixture
def config_defaults() -> dict[str, Any]:
    """Cheap argon2 and in-memory rate limits, as in the accounts tests."""
    return CHEAP


def browser_unavailable(reason: str) -> NoReturn:
    """Fail when the browser tests are required (CI), else skip, naming the reason."""
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(
            f"REQUIRE_BROWSER=1 but the browser tests cannot run: {reason}. "
            "Install it with: apt-get install -y chromium chromium-driver",
            pytrace=False,
        )
    pytest.skip(f"browser tests skipped: {reason} (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        browser_unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        except Exception as exc:  # a broken install must not pass as a skip in CI
            browser_unavailable(f"Chromium at {CHROMIUM} does not start: {exc}")
        yield b
        b.close()


@pytest.fixture
def server(app: Any) -> Iterator[str]:
    with serving(app) as srv:
        yield f"http://127.0.0.1:{srv.server_port}"


@pytest.fixture
def new_page(browser: Any) -> Iterator[Callable[..., Any]]:
    """Pages in fresh contexts (own cookies): `new_page(locale="de-DE", js=False)`.
    `bypass_csp=True` only for the axe-core audit, which injects its script."""
    contexts: list[Any] = []

    def make(locale: str = "en-US", js: bool = True, bypass_csp: bool = False) -> Any:
        ctx = browser.new_context(locale=locale, java_script_enabled=js, bypass_csp=bypass_csp)
        ctx.set_default_timeout(TIMEOUT_MS)
        contexts.append(ctx)
        return ctx.new_page()

    yield make
    for ctx in contexts:
        ctx.close()


@pytest.fixture
def page(new_page: Callable[..., Any]) -> Any:
    return new_page()
