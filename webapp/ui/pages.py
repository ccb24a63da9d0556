"""One URL, two renderings: the one place that decides between a section fragment
(htmx) and the whole page, for every screen (profile, privacy, admin).

An htmx request gets the answered section's fragment, then any out-of-band
fragments, then the text for the page's persistent live region; anything else
gets the whole page, its title starting with "Error: " when it shows errors.
Either way the answer varies by `HX-Request`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flask import Blueprint, Response, make_response, render_template

from webapp.ui import forms

__all__ = ["htmx_redirect", "no_store", "render"]


def render(
    page: str,
    fragment: str | None = None,
    *,
    oob: Iterable[str] = (),
    success: str | None = None,
    has_errors: bool = False,
    status: int = 200,
    **ctx: Any,
) -> Response:
    """`page`: the full page's template. `fragment`: the answered section's template
    (None: always the page). `oob`: templates rendered with `oob=True` after the
    fragment. `success`: the message announced in the live region. `ctx`: the
    templates' context (the same for page and fragments)."""
    ctx["page_has_errors"] = has_errors
    if forms.is_fragment() and fragment:
        body = render_template(fragment, **ctx)
        for name in oob:
            body += render_template(name, oob=True, **ctx)
        body += forms.live_status(success)
    else:
        body = render_template(page, **ctx)
    resp = make_response(body, status)
    resp.vary.add("HX-Request")
    return resp


def htmx_redirect(target: str) -> Response:
    """An htmx answer that sends the browser to `target` (a page load)."""
    resp = make_response("", 200)
    resp.headers["HX-Redirect"] = target
    resp.vary.add("HX-Request")
    return resp


def no_store(bp: Blueprint, no_referrer: bool = False) -> None:
    """Every answer of `bp` is personal: never kept by a browser or a proxy.
    `no_referrer`: the URL carries a token, so no page sends it on as Referer."""

    @bp.after_request
    def _no_store(resp: Response) -> Response:
        resp.headers["Cache-Control"] = "no-store"
        if no_referrer:
            resp.headers["Referrer-Policy"] = "no-referrer"
        return resp
