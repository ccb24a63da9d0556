"""The account and its rules: what an account may do depends on its state.

An `Account` is built from the `users` row, which the inline projection keeps
in step with the stream in the append's transaction (projection.py), so the
row read in a command's transaction is the stream's state. Every transition is
pure: given the account and the values the command prepared (hashes, tokens,
dates), it returns the events to append, or a `Refusal` with its i18n key.
Every command in accounts, privacy and admin asks here, so each rule is written
once (tests/accounts/test_account_rules.py covers every state x action).

    state               how it arises
    active              verified address, nothing pending
    unverified          active, address not (yet) verified
    deletion requested  erasure scheduled, can be cancelled in the grace period
    restricted          processing restricted (Art. 18): frozen until an operator lifts it
    erased              no account (never registered, or erased)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from webapp.accounts import events as ev
from webapp.accounts.users import User
from webapp.eventstore import NewEvent

GENERIC = "profile.errors.generic"

# While processing is restricted only the mails the law requires go out: the
# confirmation of the restriction (Art. 12(3)) and the notice that it is lifted
# (Art. 18(3)); these are their outbox kinds.
RESTRICTED_MAIL = "restricted"
RESTRICTION_LIFTED_MAIL = "restriction-lifted"
LAWFUL_WHILE_RESTRICTED = frozenset({RESTRICTED_MAIL, RESTRICTION_LIFTED_MAIL})


class State(StrEnum):
    ACTIVE = "active"
    UNVERIFIED = "unverified"
    DELETION_REQUESTED = "deletion requested"
    RESTRICTED = "restricted"
    ERASED = "erased"


@dataclass(frozen=True)
class Refusal:
    key: str  # i18n key (operators' commands: the words themselves)
    field: str | None = None  # the form field it belongs to


Decision = tuple[NewEvent, ...] | Refusal  # the events to append (maybe none), or why not


def _events(*pairs: tuple[str, Mapping[str, object]]) -> tuple[NewEvent, ...]:
    return tuple(NewEvent(name, dict(payload)) for name, payload in pairs)


@dataclass(frozen=True)
class Account:
    user: User | None  # None: erased, or never registered

    @property
    def state(self) -> State:
        u = self.user
        if u is None:
            return State.ERASED
        if u.status == ev.RESTRICTED_STATUS:
            return State.RESTRICTED
        if u.status == ev.DELETION_REQUESTED_STATUS:
            return State.DELETION_REQUESTED
        return State.ACTIVE if u.email_verified else State.UNVERIFIED

    @property
    def row(self) -> User:
        if self.user is None:
            raise LookupError("the account is erased")
        return self.user

    def _frozen(self) -> Refusal | None:
        """Refused for any change by its owner: erased, or restricted."""
        if self.state is State.ERASED:
            return Refusal(GENERIC)
        if self.state is State.RESTRICTED:
            return Refusal("privacy.restrict.restricted")
        return None

    # --- registration and verification -------------------------------------
    def register(self, email: str, password_hash: str, token: str, lang: str | None) -> Decision:
        if self.state is not State.ERASED:
            return Refusal("user.errors.emailAlreadyExists", "email")
        fields = {"email": email, "password_hash": password_hash, "session_token": token}
        return _events((ev.REGISTERED, {**fields, "language": lang}))

    def verify_email(self, address_version: int) -> Decision:
        """By the link mailed to the address (`verify.errors.<reason>` when void)."""
        if self.state is State.ERASED:
            return Refusal("verify.errors.invalid")
        if self.row.email_verified:
            return Refusal("verify.errors.used")
        return _events((ev.EMAIL_VERIFIED, self._verified(address_version)))

    def _verified(self, address_version: int) -> dict[str, object]:
        u = self.row
        return {"email": u.email, "user_id": u.id, "address_version": address_version}

    @property
    def awaits_verification(self) -> bool:
        """Its address is not verified yet (whatever else is pending)."""
        return self.user is not None and not self.user.email_verified

    def resend_verification(self) -> Decision:
        """No event: the command records the mail (it is rate limited)."""
        frozen = self._frozen()
        if frozen:
            return frozen
        if self.row.email_verified:
            return Refusal("profile.account.alreadyVerified")
        return ()

    # --- change email -------------------------------------------------------
    def change_email(self, email: str, taken: bool) -> Decision:
        frozen = self._frozen()
        if frozen:
            return frozen
        if email == self.row.email:
            return Refusal("profile.errors.emailUnchanged", "new_email")
        if taken:
            return Refusal("user.errors.emailAlreadyExists", "new_email")
        return _events((ev.EMAIL_CHANGED, {"email": email, "previous_email": self.row.email}))

    def revert_email_change(self, previous: str, version: int, token: str, taken: bool) -> Decision:
        """By the link mailed to the old address: restores it, verified."""
        if self.state is State.ERASED:
            return Refusal("verify.errors.invalid")
        if previous == self.row.email:
            return Refusal("verify.errors.used")
        if taken:
            return Refusal("revert.errors.taken")
        change = {"email": previous, "session_token": token, "reverted_version": version}
        return _events((ev.EMAIL_CHANGE_REVERTED, change))

    # --- password -----------------------------------------------------------
    def change_password(self, password_hash: str, token: str) -> Decision:
        frozen = self._frozen()
        if frozen:
            return frozen
        return _events((ev.PASSWORD_CHANGED, {"password_hash": password_hash, "session_token": token}))  # fmt: skip

    def set_password(self, password_hash: str, token: str) -> Decision:
        """The first password of an account made through a provider."""
        if self.has_password:
            return Refusal("profile.password.alreadySet")
        return self.change_password(password_hash, token)

    def rehash_password(self, password_hash: str) -> Decision:
        if self.state is State.ERASED:
            return Refusal(GENERIC)
        return _events((ev.PASSWORD_REHASHED, {"password_hash": password_hash}))

    def request_reset(self) -> Decision:
        if self.state is State.ERASED:
            return Refusal("reset.errors.invalid")
        return _events((ev.PASSWORD_RESET_REQUESTED, {}))

    def reset_password(self, password_hash: str, token: str, address_version: int) -> Decision:
        """By the reset link: the link reached the address, so it counts as verified."""
        if self.state is State.ERASED:
            return Refusal("reset.errors.invalid")
        reset = (ev.PASSWORD_RESET, {"password_hash": password_hash, "session_token": token})
        if self.row.email_verified:
            return _events(reset)
        return _events(reset, (ev.EMAIL_VERIFIED, self._verified(address_version)))

    # --- sign-in, sessions, language -----------------------------------------
    def sign_in(self) -> Refusal | None:
        """After the right password only, so the refusal tells nobody else anything.
        Allowed during the deletion grace period, so the owner can cancel."""
        if self.state is State.ERASED:
            return Refusal("auth.login.failed")
        if self.state is State.RESTRICTED:
            return Refusal("privacy.restrict.restricted")
        return None

    def revoke_other_sessions(self, token: str) -> Decision:
        return self._frozen() or _events((ev.SESSIONS_REVOKED, {"session_token": token}))

    def sign_in_on_new_device(self, browser: str, system: str, address: str) -> Decision:
        """Recorded with the sign-in (webapp/devices), which `sign_in` allowed."""
        refused = self.sign_in()
        if refused:
            return refused
        device = {"browser": browser, "system": system, "address": address}
        return _events((ev.NEW_DEVICE_SIGNED_IN, device))

    def sign_out_device(self, browser: str, system: str) -> Decision:
        """One device of "Your devices" signed out by its owner."""
        return self._frozen() or _events(
            (ev.DEVICE_SIGNED_OUT, {"browser": browser, "system": system})
        )

    def change_language(self, language: str) -> Decision:
        frozen = self._frozen()
        if frozen:
            return frozen
        if language == self.row.language:
            return ()
        return _events((ev.LANGUAGE_CHANGED, {"language": language}))

    # --- deletion -----------------------------------------------------------
    def request_deletion(self, due: datetime, token: str, via: str | None = None) -> Decision:
        if self.state is State.ERASED:
            return Refusal(GENERIC)
        if self.state is State.DELETION_REQUESTED:
            return Refusal("profile.danger.alreadyRequested")
        if self.state is State.RESTRICTED:  # frozen until lifted
            return Refusal("privacy.delete.restricted")
        payload: dict[str, object] = {"due_at": due.isoformat(), "session_token": token}
        if via:
            payload["via"] = via
        return _events((ev.DELETION_REQUESTED, payload))

    def cancel_deletion(self, now: datetime) -> Decision:
        u = self.user
        if u is None or self.state is not State.DELETION_REQUESTED or u.deletion_due_at is None:
            return Refusal("profile.danger.notRequested")
        if u.deletion_due_at <= now:
            return Refusal("profile.danger.gracePeriodExpired")
        return _events((ev.DELETION_CANCELLED, {}))

    def request_deletion_link(self, request_id: str) -> Decision:
        """The signed-out deletion: only an active account (verified or not) gets a link."""
        if self.state not in (State.ACTIVE, State.UNVERIFIED):
            return Refusal("privacy.deleteLink.invalid")
        return _events((ev.DELETION_LINK_REQUESTED, {"request_id": request_id}))

    def confirm_deletion_link(self, due: datetime, token: str) -> Decision:
        if self.state not in (State.ACTIVE, State.UNVERIFIED):
            return Refusal("privacy.deleteLink.invalid")  # no status leak: like a bad link
        return self.request_deletion(due, token, via="link")

    def erase(
        self,
        due_by: datetime | None = None,
        unverified_before: datetime | None = None,
        ever_verified: bool = False,
    ) -> Decision:
        """With `due_by`: only once a deletion request has run out by then; with
        `unverified_before`: only an account created before then, never verified."""
        u = self.user
        if u is None:
            return Refusal("erased already")
        if due_by is not None and not (
            self.state is State.DELETION_REQUESTED
            and u.deletion_due_at is not None
            and u.deletion_due_at <= due_by
        ):
            return Refusal("not due")
        if unverified_before is not None and (u.created_at > unverified_before or ever_verified):
            return Refusal("verified, or not old enough")
        return _events((ev.ERASED, {}))

    # --- restriction (Art. 18) ----------------------------------------------
    def restrict(self, token: str) -> Decision:
        if self.state is State.DELETION_REQUESTED:
            return Refusal("privacy.restrict.deletionPending")
        if self.state is State.RESTRICTED:
            return Refusal("privacy.restrict.alreadyRestricted")
        if self.state is State.ERASED:
            return Refusal(GENERIC)
        return _events((ev.RESTRICTED, {"session_token": token}))

    def lift_restriction(self) -> Decision:
        if self.state is State.ERASED:
            return Refusal("no account with that address")
        if self.state is not State.RESTRICTED:
            return Refusal("that account is not restricted")
        return _events((ev.RESTRICTION_LIFTED, {}))

    def accepts_mail(self, kind: str) -> bool:
        """While restricted, only the notices the law requires are recorded."""
        return self.state is not State.RESTRICTED or kind in LAWFUL_WHILE_RESTRICTED

    # --- the privacy center's export ------------------------------------------
    def request_export(self, job_id: str) -> Decision:
        """Allowed during a deletion's grace period (take a copy, then go)."""
        if self.state in (State.RESTRICTED, State.ERASED):
            return Refusal("privacy.export.notActive")
        return _events((ev.EXPORT_REQUESTED, {"job_id": job_id}))

    def may_be_processed(self) -> bool:
        """Whether the worker may build an export (or any processing) now."""
        return self.state not in (State.RESTRICTED, State.ERASED)

    # --- second factors (accounts/factors) -------------------------------------
    def change_factors(self, changes: tuple[NewEvent, ...]) -> Decision:
        """Its owner adds or removes a factor or takes new recovery codes."""
        return self._frozen() or changes

    def use_recovery_code(self, batch: str, number: int) -> Decision:
        """At sign-in, after the password: allowed whenever signing in is."""
        refused = self.sign_in()
        used = (ev.RECOVERY_CODE_USED, {"batch": batch, "number": number})
        return refused if refused else _events(used)

    def reset_factors(self) -> Decision:
        """By an operator, for an account that lost every factor."""
        if self.user is None:
            return Refusal("no such account")
        return _events((ev.FACTORS_RESET, {}))

    # --- linked identities (accounts/identities) --------------------------------
    @property
    def has_password(self) -> bool:
        """An account made through a provider has none until its owner sets one."""
        return bool(self.row.password_hash)

    def link_identity(self, identity: Mapping[str, object]) -> Decision:
        """Its owner connects an identity at a provider (never automatically)."""
        return self._frozen() or _events((ev.IDENTITY_LINKED, identity))

    def unlink_identity(self, identity_id: str, provider: str, other_ways: int) -> Decision:
        """Refused when it is the last way to sign in: `other_ways` counts the
        password, the passkeys and the other identities."""
        frozen = self._frozen()
        if frozen:
            return frozen
        if other_ways < 1:
            return Refusal("identities.errors.lastWay")
        return _events((ev.IDENTITY_UNLINKED, {"identity_id": identity_id, "provider": provider}))

    # --- the console ----------------------------------------------------------
    def set_admin(self, admin: bool) -> Decision:
        if self.user is None:
            return Refusal("no such account")
        if self.user.is_admin == admin:
            return ()  # already so: nothing appended
        return _events((ev.ADMIN_GRANTED if admin else ev.ADMIN_REVOKED, {}))
