"""The account's rules, state by state: every action in every state either
gives the events to append or a refusal with its key (webapp/accounts/account.py).
Pure: no database, no app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from webapp.accounts import events as ev
from webapp.accounts.account import Account, Refusal, State
from webapp.accounts.users import User

NOW = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
ACTIVE = User(
    tenant_id="default",
    id="u1",
    email="ada@example.com",
    email_verified=True,
    password_hash="hash",
    session_token="token",
    language="en",
    status=ev.ACTIVE,
    deletion_due_at=None,
    created_at=NOW - timedelta(days=30),
    version=4,
)
ACCOUNTS = {
    State.ACTIVE: Account(ACTIVE),
    State.UNVERIFIED: Account(replace(ACTIVE, email_verified=False)),
    State.DELETION_REQUESTED: Account(
        replace(
            ACTIVE, status=ev.DELETION_REQUESTED_STATUS, deletion_due_at=NOW + timedelta(days=1)
        )
    ),
    State.RESTRICTED: Account(replace(ACTIVE, status=ev.RESTRICTED_STATUS)),
    State.ERASED: Account(None),
}

A, U, D, R, E = (
    State.ACTIVE,
    State.UNVERIFIED,
    State.DELETION_REQUESTED,
    State.RESTRICTED,
    State.ERASED,
)
GENERIC = "profile.errors.generic"
FROZEN = "privacy.restrict.restricted"

# action -> (what it does, {state: the event types it appends, or the refusal's key})
Action = Callable[[Account], Any]
RULES: dict[str, tuple[Action, dict[State, tuple[str, ...] | str]]] = {
    "register": (
        lambda a: a.register("ada@example.com", "hash", "token", "en"),
        {A: "user.errors.emailAlreadyExists", U: "user.errors.emailAlreadyExists",
         D: "user.errors.emailAlreadyExists", R: "user.errors.emailAlreadyExists",
         E: (ev.REGISTERED,)},
    ),
    "verify email": (
        lambda a: a.verify_email(1),
        {A: "verify.errors.used", U: (ev.EMAIL_VERIFIED,), D: "verify.errors.used",
         R: "verify.errors.used", E: "verify.errors.invalid"},
    ),
    "resend verification": (
        lambda a: a.resend_verification(),
        {A: "profile.account.alreadyVerified", U: (), D: "profile.account.alreadyVerified",
         R: FROZEN, E: GENERIC},
    ),
    "change email": (
        lambda a: a.change_email("new@example.com", taken=False),
        {A: (ev.EMAIL_CHANGED,), U: (ev.EMAIL_CHANGED,), D: (ev.EMAIL_CHANGED,), R: FROZEN,
         E: GENERIC},
    ),
    "revert email change": (
        lambda a: a.revert_email_change("old@example.com", 3, "token", taken=False),
        {A: (ev.EMAIL_CHANGE_REVERTED,), U: (ev.EMAIL_CHANGE_REVERTED,),
         D: (ev.EMAIL_CHANGE_REVERTED,), R: (ev.EMAIL_CHANGE_REVERTED,),
         E: "verify.errors.invalid"},
    ),
    "change password": (
        lambda a: a.change_password("hash2", "token2"),
        {A: (ev.PASSWORD_CHANGED,), U: (ev.PASSWORD_CHANGED,), D: (ev.PASSWORD_CHANGED,),
         R: FROZEN, E: GENERIC},
    ),
    "rehash password": (
        lambda a: a.rehash_password("hash2"),
        {A: (ev.PASSWORD_REHASHED,), U: (ev.PASSWORD_REHASHED,), D: (ev.PASSWORD_REHASHED,),
         R: (ev.PASSWORD_REHASHED,), E: GENERIC},
    ),
    "request reset": (
        lambda a: a.request_reset(),
        {A: (ev.PASSWORD_RESET_REQUESTED,), U: (ev.PASSWORD_RESET_REQUESTED,),
         D: (ev.PASSWORD_RESET_REQUESTED,), R: (ev.PASSWORD_RESET_REQUESTED,),
         E: "reset.errors.invalid"},
    ),
    "reset password": (  # the link reached the address: an unverified one is verified
        lambda a: a.reset_password("hash2", "token2", 1),
        {A: (ev.PASSWORD_RESET,), U: (ev.PASSWORD_RESET, ev.EMAIL_VERIFIED),
         D: (ev.PASSWORD_RESET,), R: (ev.PASSWORD_RESET,), E: "reset.errors.invalid"},
    ),
    "sign in": (
        lambda a: a.sign_in() or (),
        {A: (), U: (), D: (), R: FROZEN, E: "auth.login.failed"},
    ),
    "sign out other sessions": (
        lambda a: a.revoke_other_sessions("token2"),
        {A: (ev.SESSIONS_REVOKED,), U: (ev.SESSIONS_REVOKED,), D: (ev.SESSIONS_REVOKED,),
         R: FROZEN, E: GENERIC},
    ),
    "sign in on a new device": (
        lambda a: a.sign_in_on_new_device("Chrome 120", "Linux", "203.0.113.x"),
        {A: (ev.NEW_DEVICE_SIGNED_IN,), U: (ev.NEW_DEVICE_SIGNED_IN,),
         D: (ev.NEW_DEVICE_SIGNED_IN,), R: FROZEN, E: "auth.login.failed"},
    ),
    "sign out a device": (
        lambda a: a.sign_out_device("Chrome 120", "Linux"),
        {A: (ev.DEVICE_SIGNED_OUT,), U: (ev.DEVICE_SIGNED_OUT,), D: (ev.DEVICE_SIGNED_OUT,),
         R: FROZEN, E: GENERIC},
    ),
    "change language": (
        lambda a: a.change_language("de"),
        {A: (ev.LANGUAGE_CHANGED,), U: (ev.LANGUAGE_CHANGED,), D: (ev.LANGUAGE_CHANGED,),
         R: FROZEN, E: GENERIC},
    ),
    "request deletion": (
        lambda a: a.request_deletion(NOW + timedelta(days=14), "token2"),
        {A: (ev.DELETION_REQUESTED,), U: (ev.DELETION_REQUESTED,),
         D: "profile.danger.alreadyRequested", R: "privacy.delete.restricted", E: GENERIC},
    ),
    "cancel deletion": (
        lambda a: a.cancel_deletion(NOW),
        {A: "profile.danger.notRequested", U: "profile.danger.notRequested",
         D: (ev.DELETION_CANCELLED,), R: "profile.danger.notRequested",
         E: "profile.danger.notRequested"},
    ),
    "ask for a deletion link": (
        lambda a: a.request_deletion_link("r1"),
        {A: (ev.DELETION_LINK_REQUESTED,), U: (ev.DELETION_LINK_REQUESTED,),
         D: "privacy.deleteLink.invalid", R: "privacy.deleteLink.invalid",
         E: "privacy.deleteLink.invalid"},
    ),
    "confirm a deletion link": (
        lambda a: a.confirm_deletion_link(NOW + timedelta(days=14), "token2"),
        {A: (ev.DELETION_REQUESTED,), U: (ev.DELETION_REQUESTED,),
         D: "privacy.deleteLink.invalid", R: "privacy.deleteLink.invalid",
         E: "privacy.deleteLink.invalid"},
    ),
    "erase when due": (
        lambda a: a.erase(due_by=NOW + timedelta(days=2)),
        {A: "not due", U: "not due", D: (ev.ERASED,), R: "not due", E: "erased already"},
    ),
    "restrict processing": (
        lambda a: a.restrict("token2"),
        {A: (ev.RESTRICTED,), U: (ev.RESTRICTED,), D: "privacy.restrict.deletionPending",
         R: "privacy.restrict.alreadyRestricted", E: GENERIC},
    ),
    "lift the restriction": (
        lambda a: a.lift_restriction(),
        {A: "that account is not restricted", U: "that account is not restricted",
         D: "that account is not restricted", R: (ev.RESTRICTION_LIFTED,),
         E: "no account with that address"},
    ),
    "request an export": (  # allowed in the grace period: take a copy, then go
        lambda a: a.request_export("j1"),
        {A: (ev.EXPORT_REQUESTED,), U: (ev.EXPORT_REQUESTED,), D: (ev.EXPORT_REQUESTED,),
         R: "privacy.export.notActive", E: "privacy.export.notActive"},
    ),
    "grant the console": (
        lambda a: a.set_admin(True),
        {A: (ev.ADMIN_GRANTED,), U: (ev.ADMIN_GRANTED,), D: (ev.ADMIN_GRANTED,),
         R: (ev.ADMIN_GRANTED,), E: "no such account"},
    ),
}  # fmt: skip

CASES = [
    pytest.param(action, state, expected, id=f"{action} / {state}")
    for action, (_, table) in RULES.items()
    for state, expected in table.items()
]


def _outcome(decision: Any) -> tuple[str, ...] | str:
    if isinstance(decision, Refusal):
        return decision.key
    return tuple(e.type for e in decision)


def test_every_action_has_a_rule_for_every_state() -> None:
    for action, (_, table) in RULES.items():
        assert set(table) == set(State), action


@pytest.mark.parametrize(("action", "state", "expected"), CASES)
def test_action_in_state(action: str, state: State, expected: tuple[str, ...] | str) -> None:
    do, _ = RULES[action]
    assert ACCOUNTS[state].state is state
    assert _outcome(do(ACCOUNTS[state])) == expected


def test_the_states_come_from_the_row() -> None:
    assert {s: a.state for s, a in ACCOUNTS.items()} == {s: s for s in State}


def test_an_unchanged_or_taken_address_is_refused_at_the_new_email_field() -> None:
    unchanged = ACCOUNTS[A].change_email("ada@example.com", taken=False)
    taken = ACCOUNTS[A].change_email("bob@example.com", taken=True)
    assert unchanged == Refusal("profile.errors.emailUnchanged", "new_email")
    assert taken == Refusal("user.errors.emailAlreadyExists", "new_email")


def test_an_email_change_carries_both_addresses_for_the_revert() -> None:
    (changed,) = ACCOUNTS[U].change_email("new@example.com", taken=False)  # type: ignore[misc]
    assert changed.payload == {"email": "new@example.com", "previous_email": "ada@example.com"}


def test_a_revert_refuses_a_spent_link_and_a_taken_address() -> None:
    spent = ACCOUNTS[A].revert_email_change("ada@example.com", 3, "t", taken=False)
    taken = ACCOUNTS[A].revert_email_change("old@example.com", 3, "t", taken=True)
    assert spent == Refusal("verify.errors.used")
    assert taken == Refusal("revert.errors.taken")


def test_cancelling_after_the_grace_period_is_refused() -> None:
    late = ACCOUNTS[D].cancel_deletion(NOW + timedelta(days=2))
    assert late == Refusal("profile.danger.gracePeriodExpired")


def test_a_deletion_by_link_says_so_in_its_event() -> None:
    (requested,) = ACCOUNTS[A].confirm_deletion_link(NOW, "t")  # type: ignore[misc]
    assert requested.payload["via"] == "link"
    assert requested.payload["due_at"] == NOW.isoformat()


def test_unverified_accounts_expire_only_when_old_and_never_verified() -> None:
    cutoff = NOW - timedelta(days=7)
    assert _outcome(ACCOUNTS[U].erase(unverified_before=cutoff)) == (ev.ERASED,)
    assert ACCOUNTS[U].erase(unverified_before=cutoff, ever_verified=True) == Refusal(
        "verified, or not old enough"
    )
    young = Account(replace(ACTIVE, email_verified=False, created_at=NOW))
    assert isinstance(young.erase(unverified_before=cutoff), Refusal)


def test_the_same_language_or_console_role_appends_nothing() -> None:
    assert ACCOUNTS[A].change_language("en") == ()
    assert ACCOUNTS[A].set_admin(False) == ()


def test_while_restricted_only_the_lawful_notices_are_mailed() -> None:
    restricted = ACCOUNTS[R]
    assert not restricted.accepts_mail("verification")
    assert restricted.accepts_mail("restricted") and restricted.accepts_mail("restriction-lifted")
    assert all(ACCOUNTS[s].accepts_mail("verification") for s in (A, U, D))
    assert not restricted.may_be_processed() and not ACCOUNTS[E].may_be_processed()
    assert ACCOUNTS[D].may_be_processed()


def test_every_event_a_transition_appends_is_declared_with_its_fields() -> None:
    for action, (do, table) in RULES.items():
        for state in table:
            decision = do(ACCOUNTS[state])
            for e in () if isinstance(decision, Refusal) else decision:
                declared = ev.DECLARED[e.type]
                assert set(e.payload) <= set(declared.fields), (action, e.type)


def test_sealed_fields_are_declared_fields() -> None:
    for t in ev.DECLARED.values():
        assert t.sealed <= set(t.fields), t.name


def test_awaiting_verification_is_about_the_address_whatever_is_pending() -> None:
    deleting_unverified = Account(
        replace(ACTIVE, email_verified=False, status=ev.DELETION_REQUESTED_STATUS)
    )
    assert ACCOUNTS[U].awaits_verification and deleting_unverified.awaits_verification
    assert not any(ACCOUNTS[s].awaits_verification for s in (A, D, R, E))
