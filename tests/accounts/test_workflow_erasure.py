"""Account erasure reaches workflow runs: the results a run stored for the
person are erased and their open runs cancelled, in the erasure's transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from tests.support.accounts import register, user_row
from webapp.accounts import erase_accounts
from webapp.core import db
from webapp.workflows.store.tables import workflow_runs


def _runs_of(user_id: str) -> list[Any]:
    with db.reading() as conn:
        return list(
            conn.execute(select(workflow_runs).where(workflow_runs.c.subject_id == user_id))
        )


def test_erasing_an_account_erases_its_runs_results(app: Any, client: Any, work: Any) -> None:
    register(client, "ada@example.com")
    work()
    user = user_row("ada@example.com")
    (run,) = _runs_of(user.id)
    assert run.status == "suspended"  # waiting for the address to be verified
    with db.transaction() as conn:  # what a step could have stored about her
        conn.execute(
            update(workflow_runs)
            .where(workflow_runs.c.run_id == run.run_id)
            .values(results={**run.results, "profile": {"email": "ada@example.com"}})
        )
    register(client, "bob@example.com")
    work()
    bob = user_row("bob@example.com")
    (bobs_run,) = _runs_of(bob.id)

    assert erase_accounts.erase("default", user.id)

    (run,) = _runs_of(user.id)
    assert run.results == {}
    assert run.status == "cancelled" and run.reason == "subject_erased"  # why, never who
    assert "ada@example.com" not in str(run._mapping)
    (bobs_run_after,) = _runs_of(bob.id)
    assert bobs_run_after.status == "suspended" and bobs_run_after.results == bobs_run.results
