"""In real Chromium: "Sign out" after "Remember me" signs out for good:
the remember cookie is gone, a new visit to /profile asks to sign in, and the
cookie taken before signing out no longer opens the profile."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.browser import flows


def test_sign_out_after_remember_me_stays_signed_out(page: Any, server: str) -> None:
    flows.register(page, server, "ada@example.com")
    page.goto(f"{server}/login")
    page.get_by_label("Remember me").check()
    flows.fill_sign_in(page, "ada@example.com")
    page.wait_for_url(f"{server}/profile")
    context = page.context
    remember = [c for c in context.cookies() if c["name"] == "remember_token"]
    assert len(remember) == 1

    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url(f"{server}/login")
    assert [c for c in context.cookies() if c["name"] == "remember_token"] == []

    # As after closing the browser: the session cookie is gone too.
    context.clear_cookies()
    page.goto(f"{server}/profile")
    page.wait_for_url(f"{server}/login?next=/profile")
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()

    # The remember cookie from before signing out, put back: still signed out.
    context.add_cookies([remember[0]])
    page.goto(f"{server}/profile")
    page.wait_for_url(f"{server}/login?next=/profile")
