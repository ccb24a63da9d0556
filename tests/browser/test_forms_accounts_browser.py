"""The error pattern on sign-up and sign-in, with and without JavaScript: one
summary with a link per error (a click takes focus to the field), each message at
its field and in its aria-describedby, every error of a submit at once, focus on
the summary after the page loads, "Error: " in the title, and the skip link."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser import a11y, flows
from tests.support.accounts import PASSWORD

pytestmark = pytest.mark.browser

HINT = "At least 15 characters. A few unrelated words make a good password."


@pytest.fixture(params=[True, False], ids=["js", "nojs"])
def any_page(request: Any, new_page: Callable[..., Any]) -> Any:
    return new_page(js=request.param)


def test_sign_up_reports_every_error_at_once_at_its_field(any_page: Any, server: str) -> None:
    page = any_page
    page.goto(f"{server}/register")
    expect(page).to_have_title("Create account")
    main = page.locator("main")
    a11y.expect_no_errors(page, main)

    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.get_by_role("button", name="Create account").click()  # all empty
    expect(page).to_have_title("Error: Create account")
    empty = [
        ("Email", "Enter your email address."),
        ("Password", "Enter a password."),
        ("Confirm password", "Enter the password again."),
    ]
    a11y.expect_errors(page, main, empty, hints={"Password": HINT})
    expect(a11y.summary(main)).to_be_focused()  # a page load: the summary has focus
    assert posts == [f"{server}/register"]  # novalidate: our messages, not the browser's

    page.get_by_label("Email", exact=True).fill("ada@example")
    page.get_by_label("Password", exact=True).fill("short one")
    page.get_by_label("Confirm password", exact=True).fill("short two")
    page.get_by_role("button", name="Create account").click()
    wrong = [
        ("Email", "Enter a valid email address."),
        ("Password", "The password must be at least 15 characters long."),
        ("Confirm password", "The passwords do not match."),
    ]
    a11y.expect_errors(page, main, wrong, hints={"Password": HINT})
    expect(a11y.summary(main)).to_be_focused()
    # What was typed stays for correcting, passwords never come back.
    expect(page.get_by_label("Email", exact=True)).to_have_value("ada@example")
    expect(page.get_by_label("Password", exact=True)).to_have_value("")
    a11y.expect_links_move_focus(main, wrong)

    flows.register(page, server, "ada@example.com")
    expect(page).to_have_title("Create account")


def test_sign_in_errors_focus_and_the_failed_sign_in(any_page: Any, server: str) -> None:
    page = any_page
    flows.register(page, server, "ada@example.com")
    page.goto(f"{server}/login")
    main = page.locator("main")
    page.get_by_role("button", name="Sign in", exact=True).click()
    both = [("Email", "Enter your email address."), ("Password", "Enter your password.")]
    a11y.expect_errors(page, main, both)
    expect(page).to_have_title("Error: Sign in")
    expect(a11y.summary(main)).to_be_focused()
    a11y.expect_links_move_focus(main, both)

    # One error: on a page load focus still starts at the summary, above the form.
    page.get_by_label("Email", exact=True).fill("ada@example.com")
    page.get_by_role("button", name="Sign in", exact=True).click()
    a11y.expect_errors(page, main, [("Password", "Enter your password.")])
    expect(a11y.summary(main)).to_be_focused()

    # A refused sign-in is no one field's fault: in the summary only, its link
    # leading to the first field, no field marked.
    flows.fill_sign_in(page, "ada@example.com", "not the right password")
    box = a11y.summary(main)
    expect(box.locator("li")).to_have_text(["The email address or password is not correct."])
    expect(box).to_be_focused()
    expect(main.locator("[aria-invalid=true]")).to_have_count(0)
    expect(page).to_have_title("Error: Sign in")
    box.get_by_role("link").click()
    expect(page.get_by_label("Email", exact=True)).to_be_focused()

    flows.fill_sign_in(page, "ada@example.com", PASSWORD)
    page.wait_for_url(f"{server}/profile")
    expect(page).to_have_title("Your profile")


def test_skip_link_is_the_first_stop_and_lands_on_the_main_content(
    any_page: Any, server: str
) -> None:
    page = any_page
    for path, heading in (("/login", "Sign in"), ("/register", "Create account")):
        page.goto(f"{server}{path}")
        page.keyboard.press("Tab")
        skip = page.get_by_role("link", name="Skip to main content")
        expect(skip).to_be_focused()
        expect(skip).to_be_visible()  # hidden until it has focus, then shown
        assert skip.evaluate("el => el.getBoundingClientRect().width") > 10
        page.keyboard.press("Enter")
        expect(page.locator("main")).to_be_focused()
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
        page.keyboard.press("Tab")  # the next stop is inside main, past the header
        focused_in_main = page.evaluate(
            "document.querySelector('main').contains(document.activeElement)"
        )
        assert focused_in_main
    # Not shown to sighted mouse users until focused.
    page.goto(f"{server}/login")
    skip = page.get_by_role("link", name="Skip to main content")
    assert skip.evaluate("el => el.getBoundingClientRect().width") <= 1
