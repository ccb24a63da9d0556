"""Passkeys under `make run`'s defaults (issue 34, point 1), in real Chromium
with its virtual authenticator: `python -m worker.dev` started as `make run`
starts it, with no BASE_URL (nor HOST, DATABASE_URL, REDIS_URL, SECRET_KEY) in
its environment, only a free PORT. The address it prints as "Ready:" is
http://localhost:PORT/, and there a person registers, signs in, adds a
passkey and signs in with it. Opened by IP address (http://127.0.0.1:PORT),
Chromium refuses WebAuthn with a SecurityError, and the page names the cause
and the address to open instead of saying the request was cancelled.

Before the fix the default BASE_URL was http://127.0.0.1:PORT: its RP ID an
IP address, which Chromium refuses ("This is an invalid domain")."""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest
from playwright.sync_api import expect

from tests import procs
from tests.browser import flows
from tests.browser.flows import banner, section
from tests.browser.test_passkeys_browser import (
    SECTION,
    add_passkey,
    csp_errors,
    sign_out,
    virtual_authenticator,
)

pytestmark = pytest.mark.browser

# Set by the test session or a developer's shell; `make run`'s defaults mean none.
NOT_SET = (
    "BASE_URL",
    "HOST",
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "WORKER_HEALTH_PORT",
    "SCHEDULER_HEALTH_PORT",
)
READY = re.compile(r"Ready: (\S+)/\s")
IP_WARNING = "BASE_URL's host is an IP address"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MakeRun(NamedTuple):
    url: str  # the address it printed as "Ready:", without the final slash
    port: int
    proc: procs.Proc


@pytest.fixture(scope="module")
def make_run(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    """`make run` with its defaults on a free port."""
    home = tmp_path_factory.mktemp("run")  # short: the embedded Redis's socket is in it
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in NOT_SET}
    env.update(
        INSTANCE_PATH=str(home / "i"),
        # `make run` empties its metrics directory first: not the test session's
        PROMETHEUS_MULTIPROC_DIR=str(home / "metrics"),
        PORT=str(port),
        WEB_CONCURRENCY="1",
    )
    run = procs.Proc([sys.executable, "-m", "worker.dev"], env, home / "run.log")
    try:
        ready = procs.until(
            lambda: READY.search(run.output()) or not run.alive(), timeout=90, what="make run ready"
        )
        assert run.alive(), run.output()[-3000:]
        procs.until(lambda: _serves(port), timeout=30, what="the web process answers")
        yield MakeRun(ready.group(1), port, run)
    finally:
        run.stop()


def _serves(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return s.recv(12).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def test_at_the_address_make_run_prints_a_passkey_is_added_and_signs_in(
    make_run: MakeRun, new_page: Callable[..., Any]
) -> None:
    site = make_run.url
    page = new_page()
    errors = csp_errors(page)
    cdp, authenticator = virtual_authenticator(page)
    flows.register_and_sign_in(page, site, "ada@example.com")
    region = add_passkey(page, "Laptop")
    expect(region.get_by_test_id("passkey-name")).to_have_text(["Laptop"])
    creds = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})
    assert [c["rpId"] for c in creds["credentials"]] == ["localhost"]
    sign_out(page, site)
    page.get_by_role("button", name="Sign in with a passkey").click()
    page.wait_for_url(f"{site}/profile")  # signed in with it: no address, no password
    expect(section(page, SECTION).get_by_test_id("passkey-last-used")).not_to_have_text(
        ["Not used yet"]
    )
    assert errors == []
    # BASE_URL's default, not HOST's 127.0.0.1; nothing to warn about at start-up
    assert site == f"http://localhost:{make_run.port}"
    assert IP_WARNING not in make_run.proc.output()


def test_opened_by_ip_address_the_page_names_the_cause(
    make_run: MakeRun, new_page: Callable[..., Any]
) -> None:
    site = make_run.url
    by_ip = f"http://127.0.0.1:{make_run.port}"
    message = (
        f"Passkeys work only when this site is opened at {site}, "
        "by its domain name and not by an IP address."
    )
    page = new_page()
    cdp, authenticator = virtual_authenticator(page)
    flows.register_and_sign_in(page, by_ip, "bob@example.com")
    region = section(page, SECTION)
    region.get_by_label("Passkey name", exact=True).fill("Laptop")
    region.get_by_role("button", name="Add a passkey").click()
    region = section(page, SECTION)
    banner(region, "alert", message)
    expect(region).not_to_contain_text("cancelled or timed out")
    assert (
        cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"] == []
    )
    sign_out(page, by_ip)
    page.get_by_role("button", name="Sign in with a passkey").click()
    banner(page, "alert", message)

    german = new_page(locale="de-DE")
    virtual_authenticator(german)
    german.goto(f"{by_ip}/login")
    german.get_by_role("button", name="Mit einem Passkey anmelden").click()
    banner(german, "alert", f"Passkeys funktionieren nur, wenn diese Seite unter {site} geöffnet")
