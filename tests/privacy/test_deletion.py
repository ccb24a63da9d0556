"""Delete account on the privacy page (the profile's danger zone itself), and
signed-out deletion by a link sent to the address."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from babel.dates import format_date

from tests.support.accounts import PASSWORD, link_in, login, mails, user_row
from tests.support.web import csrf_token, post
from webapp.accounts import erase_accounts

NEUTRAL = "If an account exists for that address, we have sent a confirmation link."
INVALID = "This link is invalid or has expired."


def _ask(client: Any, address: str) -> Any:
    return client.post(
        "/delete-account",
        data={"email": address, "csrf_token": csrf_token(client, "/delete-account")},
    )


def _links(app: Any, address: str) -> list[str]:
    return [
        link_in(m, "/delete-account/")
        for m in mails(app)
        if m["To"] == address and "/delete-account/" in str(m.get_body(preferencelist=("plain",)))
    ]


def _confirm(client: Any, link: str) -> Any:
    return client.post(link, data={"csrf_token": csrf_token(client, link)})


def test_the_privacy_delete_section_is_the_profile_danger_zone(client: Any, user: Any) -> None:
    page = client.get("/privacy").get_data(as_text=True)
    section = page.split('data-testid="privacy-delete"')[1].split("</section>")[0]
    assert 'data-testid="profile-delete-submit"' in section  # the same template
    assert 'action="/privacy/delete"' in section
    answer = post(client, "/privacy/delete", htmx=True, current_password=PASSWORD)
    fragment = answer.get_data(as_text=True)
    assert answer.status_code == 200 and fragment.lstrip().startswith("<section")
    assert 'id="privacy-delete"' in fragment and "Cancel deletion" in fragment
    cancelled = post(client, "/privacy/cancel-deletion", htmx=True)
    assert "Deletion cancelled." in cancelled.get_data(as_text=True)
    wrong = post(client, "/privacy/delete", current_password="not the password at all")
    assert wrong.status_code == 422 and "<h1>Privacy</h1>" in wrong.get_data(as_text=True)


def test_signed_out_deletion_by_link_then_cancel_after_signing_in(
    app: Any, client: Any, user: Any, work: Any, clock: Any
) -> None:
    anonymous = app.test_client()
    assert "Send confirmation link" in anonymous.get("/delete-account").get_data(as_text=True)
    for address in ("ada@example.com", "nobody@example.com"):
        answer = _ask(anonymous, address)
        assert answer.status_code == 200 and NEUTRAL in answer.get_data(as_text=True)
    work()
    assert _links(app, "nobody@example.com") == []
    (link,) = _links(app, "ada@example.com")
    opened = anonymous.get(link)
    assert opened.status_code == 200 and "Confirm deletion" in opened.get_data(as_text=True)
    assert user_row("ada@example.com").status == "active"  # opening changes nothing
    done = _confirm(anonymous, link)
    due = clock.now() + timedelta(days=14)
    text = f"Your account will be deleted on {format_date(due, format='long', locale='en')}. Sign in to cancel."
    assert done.status_code == 200 and text in done.get_data(as_text=True)
    assert user_row("ada@example.com").status == "deletionRequested"
    assert client.get("/privacy").status_code == 302  # every session ended

    reused = _confirm(anonymous, link)
    assert reused.status_code == 400 and INVALID in reused.get_data(as_text=True)

    # Signing in during the grace period is allowed, so the owner can cancel.
    assert login(client, "ada@example.com").status_code == 302
    post(client, "/privacy/cancel-deletion")
    assert user_row("ada@example.com").status == "active"
    assert INVALID in _confirm(anonymous, link).get_data(as_text=True)  # a cancelled request's link


def test_an_older_or_expired_link_is_refused(app: Any, user: Any, work: Any, clock: Any) -> None:
    anonymous = app.test_client()
    _ask(anonymous, "ada@example.com")
    clock.advance(timedelta(minutes=2))  # past the one-a-minute limit
    _ask(anonymous, "ada@example.com")
    work()
    older, newer = _links(app, "ada@example.com")
    assert INVALID in anonymous.get(older).get_data(as_text=True)
    assert anonymous.get(older).status_code == 400
    clock.advance(timedelta(minutes=61))
    assert INVALID in _confirm(anonymous, newer).get_data(as_text=True)
    assert anonymous.get("/delete-account/garbage").status_code == 400
    assert user_row("ada@example.com").status == "active"


def test_a_non_active_account_answers_like_an_invalid_link(
    app: Any, client: Any, user: Any, work: Any
) -> None:
    anonymous = app.test_client()
    _ask(anonymous, "ada@example.com")
    work()
    (link,) = _links(app, "ada@example.com")
    post(client, "/privacy/restrict", current_password=PASSWORD)
    answer = anonymous.get(link)
    assert answer.status_code == 400 and INVALID in answer.get_data(as_text=True)
    assert NEUTRAL in _ask(anonymous, "ada@example.com").get_data(as_text=True)
    work()
    assert len(_links(app, "ada@example.com")) == 1  # no new mail while restricted


def test_bad_input_and_the_rate_limit(app: Any) -> None:
    anonymous = app.test_client()
    empty = _ask(anonymous, "")
    assert empty.status_code == 422 and "There is a problem" in empty.get_data(as_text=True)
    statuses = [_ask(anonymous, f"x{i}@example.com").status_code for i in range(10)]
    assert statuses.count(429) >= 1  # 10 a minute per address, the empty one counted


def test_erasure_after_a_link_deletion(app: Any, user: Any, work: Any, clock: Any) -> None:
    anonymous = app.test_client()
    _ask(anonymous, "ada@example.com")
    work()
    _confirm(anonymous, _links(app, "ada@example.com")[0])
    clock.advance(timedelta(days=14, seconds=1))
    assert erase_accounts.erase_due("default", clock.now()) == 1
    assert user_row("ada@example.com") is None
