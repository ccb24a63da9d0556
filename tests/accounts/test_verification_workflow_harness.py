"""The product's own email-verification workflow under the workflow test
harness: a real registration, a day that passes in milliseconds, the one
reminder (or none once the address is verified, or a new one for a changed
address). No worker, Redis or web client: the account commands, the outbox
and the workflow engine run in-process."""

from __future__ import annotations

import re
from typing import Any

from tests.support.accounts import PASSWORD
from webapp.accounts import change_email, registration, users, verification_workflow
from webapp.core import db
from webapp.workflows.testing import Mail, WorkflowTest

FLOWS = (verification_workflow.ON_REGISTERED, verification_workflow.ON_EMAIL_CHANGED)


def links_to(t: WorkflowTest, address: str) -> list[Mail]:
    return [m for m in t.mails if m.to == address and "/verify-email/" in m.body]


def token_in(m: Mail) -> str:
    found = re.search(r"/verify-email/(\S+)", m.body)
    assert found, m.body
    return found.group(1)


def register(t: WorkflowTest, address: str) -> str:
    result = registration.register(address, PASSWORD, PASSWORD, "en")
    assert result.ok and result.user_id
    t.run_until_idle()
    return result.user_id


def test_an_unverified_registration_gets_one_reminder_after_24_hours(workflow_test: Any) -> None:
    t = workflow_test(*FLOWS)
    register(t, "ada@example.com")
    assert len(links_to(t, "ada@example.com")) == 1  # the verification mail itself
    (run,) = t.runs("email-verification-registered")
    assert run.status == "suspended"

    t.advance("PT23H59M")
    assert len(links_to(t, "ada@example.com")) == 1
    t.advance("PT1M")
    sent = links_to(t, "ada@example.com")
    assert len(sent) == 2 and "a reminder" in sent[-1].body
    assert t.run(run.run_id).status == "completed"
    assert t.run(run.run_id).results["reminder"] == "recorded"

    t.advance("P3D")
    assert len(links_to(t, "ada@example.com")) == 2  # only one reminder


def test_no_reminder_once_the_address_is_verified(workflow_test: Any) -> None:
    t = workflow_test(*FLOWS)
    register(t, "ada@example.com")
    (link,) = links_to(t, "ada@example.com")
    assert registration.verify_email(token_in(link)).ok
    t.run_until_idle()
    (run,) = t.runs("email-verification-registered")
    assert run.status == "completed"
    assert run.results["verified"]["address_version"] == 1
    t.advance("P2D")
    assert len(links_to(t, "ada@example.com")) == 1


def test_a_changed_address_is_reminded_and_the_old_run_stands_down() -> None:
    with WorkflowTest(*FLOWS) as t:
        user_id = register(t, "ada@example.com")
        t.advance("PT1H")
        with db.reading() as conn:
            ada = users.get_user(conn, user_id)
        assert ada is not None
        assert change_email.change_email(ada, "ada@new.example", PASSWORD).ok
        t.run_until_idle()
        assert len(links_to(t, "ada@new.example")) == 1

        t.advance("PT23H")  # the registration's run times out: its address changed since
        (first,) = t.runs("email-verification-registered")
        assert (first.status, first.results["reminder"]) == ("completed", "skipped")
        assert len(links_to(t, "ada@example.com")) == 1

        t.advance("PT1H")  # the change's own run reminds the new address
        (changed,) = t.runs("email-verification-changed")
        assert (changed.status, changed.results["reminder"]) == ("completed", "recorded")
        assert len(links_to(t, "ada@new.example")) == 2
