""" "Resend verification email" is limited (one a minute, three an
hour per account), with a clear message in English and German."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.support.accounts import body, mails
from tests.support.web import post


def _verification_mails(app: Any) -> int:
    return len([m for m in mails(app) if "/verify-email/" in body(m)])


def test_twelve_quick_clicks_send_no_extra_mail(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    answers = [post(client, "/profile/resend-verification", htmx=True) for _ in range(12)]
    work()
    assert _verification_mails(app) == 1  # the registration's mail only
    assert {r.status_code for r in answers} == {429}
    assert "less than a minute ago" in answers[-1].get_data(as_text=True)


def test_twelve_clicks_a_minute_apart_send_three_mails_an_hour(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    codes = []
    for _ in range(12):
        clock.advance(61)
        codes.append(post(client, "/profile/resend-verification", htmx=True).status_code)
    work()
    assert codes[:3] == [200, 200, 200] and set(codes[3:]) == {429}
    assert _verification_mails(app) == 1 + 3
    r = post(client, "/profile/resend-verification", htmx=True)
    assert "too many verification emails in the last hour" in r.get_data(as_text=True)
    clock.advance(timedelta(hours=1))
    assert post(client, "/profile/resend-verification", htmx=True).status_code == 200


def test_the_limit_message_in_german(app: Any, client: Any, user: Any) -> None:
    post(client, "/profile/language", language="de")
    r = post(client, "/profile/resend-verification")
    assert r.status_code == 429
    assert "vor weniger als einer Minute" in r.get_data(as_text=True)
