"""Sign-in by emailed code in real Chromium (docs/accounts.md, "Sign-in by
emailed code"): from "Email me a sign-in code" on /login to signed in, with
htmx (the section swaps in place, the live region announces the answer, the
right code loads the next page) and without JavaScript (whole pages), the
error pattern on both forms, and axe-core on every state."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.support.accounts import body, mails

pytestmark = pytest.mark.browser

ADA = "ada@example.com"
SENT = "If an account exists for {}, we have sent a sign-in code to it."


def mailed_code(app: Any, work: Any, address: str = ADA) -> str:
    work()
    found = [
        re.search(r"^([2-9A-Z]{8})$", body(m), re.MULTILINE)
        for m in mails(app)
        if m["To"] == address and m["Subject"] == "Your sign-in code"
    ]
    assert found and found[-1], f"no sign-in code mailed to {address}"
    return found[-1].group(1)


def section(page: Any) -> Any:
    return page.get_by_role("region", name="Sign in with a code")


def test_with_htmx_the_section_swaps_and_the_code_signs_in(
    new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    page = new_page(bypass_csp=True)  # axe-core is injected
    flows.register(page, server, ADA)
    page.goto(f"{server}/login?next=/privacy")
    page.get_by_role("link", name="Email me a sign-in code").click()
    page.wait_for_url(f"{server}/login/email-code?next=/privacy")
    region = section(page)
    a11y.audit(page, "ask for a sign-in code")
    flows.no_navigation_marker(page)

    region.get_by_role("button", name="Email me a sign-in code").click()
    a11y.expect_errors(page, section(page), [("Email", "Enter your email address.")])
    a11y.expect_links_move_focus(section(page), [("Email", "Enter your email address.")])
    a11y.audit(page, "ask for a code, no address")

    section(page).get_by_label("Email", exact=True).fill("Ada@Example.com")
    section(page).get_by_role("button", name="Email me a sign-in code").click()
    flows.banner(section(page), "status", SENT.format(ADA))
    expect(flows.announced(page)).to_contain_text(SENT.format(ADA))
    assert flows.still_same_document(page)
    a11y.audit(page, "code sent")

    code = mailed_code(app, work)
    wrong = "22222222" if code != "22222222" else "33333333"
    field = section(page).get_by_label("Sign-in code", exact=True)
    expect(field).to_have_attribute("autocomplete", "one-time-code")
    field.fill(wrong)
    section(page).get_by_role("button", name="Sign in", exact=True).click()
    a11y.expect_errors(
        page,
        section(page),
        [("Sign-in code", "That sign-in code is not correct.")],
        hints={"Sign-in code": "8 letters and digits, from the email."},
    )
    assert flows.still_same_document(page)
    a11y.audit(page, "a wrong code")

    section(page).get_by_label("Sign-in code", exact=True).fill(code.lower())
    section(page).get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(f"{server}/privacy")  # `next` kept from /login
    page.goto(f"{server}/profile")
    expect(page.get_by_role("heading", level=1)).to_have_text("Your profile")


def test_without_javascript_whole_pages_and_the_same_answer_for_anyone(
    new_page: Callable[..., Any], server: str, app: Any, work: Any
) -> None:
    page = new_page(js=False)
    flows.register(page, server, ADA)
    stranger = new_page(js=False)
    for p, address in ((stranger, "nobody@example.com"), (page, ADA)):
        p.goto(f"{server}/login")
        p.get_by_role("link", name="Email me a sign-in code").click()
        section(p).get_by_label("Email", exact=True).fill(address)
        section(p).get_by_role("button", name="Email me a sign-in code").click()
        p.wait_for_url(f"{server}/login/email-code")
        flows.banner(section(p), "status", SENT.format(address))
        expect(section(p).locator("[data-banner=success]")).to_be_focused()
    stranger.goto(f"{server}/login/email-code/enter")  # the code form's own address
    expect(section(stranger).get_by_test_id("email-code-sent")).to_contain_text(
        SENT.format("nobody@example.com")
    )
    expect(section(stranger).get_by_label("Sign-in code", exact=True)).to_be_visible()

    code = mailed_code(app, work)
    section(page).get_by_label("Sign-in code", exact=True).fill("nonsense")
    section(page).get_by_role("button", name="Sign in", exact=True).click()
    a11y.expect_errors(
        page,
        section(page),
        [("Sign-in code", "A sign-in code has 8 letters and digits.")],
        hints={"Sign-in code": "8 letters and digits, from the email."},
    )
    section(page).get_by_label("Sign-in code", exact=True).fill(code)
    section(page).get_by_role("checkbox", name="Remember me").check()
    section(page).get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(f"{server}/profile")
    assert any(c["name"] == "remember_token" for c in page.context.cookies())
