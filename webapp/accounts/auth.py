"""Registration and sign-in."""

from __future__ import annotations

import logging
import secrets
import uuid

from sqlalchemy.exc import IntegrityError

from webapp import db
from webapp.accounts import crypto, emails, passwords
from webapp.accounts import events as ev
from webapp.accounts.commands import (
    LANGUAGES,
    Outcome,
    append_to,
    check_new_password,
    enqueue_after_commit,
    hasher,
    request_verification,
    seal,
)
from webapp.accounts.users import User, find_by_email, get_user, stream_of
from webapp.eventstore import Metadata, NewEvent, VersionConflict, append
from webapp.tenants import DEFAULT_TENANT

log = logging.getLogger(__name__)


def register(email_raw: str, password: str, confirm: str, language: str | None) -> Outcome:
    checked = emails.check(email_raw)
    if checked.error:
        return Outcome.error(checked.error, "email")
    email = checked.address
    if password != confirm:
        return Outcome.error("auth.register.mismatch", "confirm")
    problem = check_new_password(email, password, field="password")
    if problem:
        return problem
    # Hash before looking the address up, so both paths cost the same time.
    password_hash = passwords.hash_password(hasher(), password)
    lang = language if language in LANGUAGES else None
    try:
        with db.transaction() as conn:
            existing = find_by_email(conn, email)
            if existing is not None:
                # No enumeration: the page says the same; the owner hears about it.
                enqueue_after_commit(conn, "send_registration_attempt", DEFAULT_TENANT, existing.id)
                return Outcome(True, "auth.register.success", {"email": email})
            user_id = str(uuid.uuid4())
            key = crypto.create_key(conn, DEFAULT_TENANT, user_id)
            append(
                conn,
                stream_of(DEFAULT_TENANT, user_id),
                [
                    NewEvent(
                        ev.REGISTERED,
                        {
                            "email": crypto.seal(key, user_id, email),
                            "password_hash": crypto.seal(key, user_id, password_hash),
                            "session_token": crypto.seal(key, user_id, secrets.token_urlsafe(24)),
                            "language": lang,
                        },
                    )
                ],
                0,
                Metadata(actor="anonymous"),
            )
            request_verification(conn, user_id)
    except IntegrityError:
        # Lost a race with a concurrent registration of the same address.
        return Outcome(True, "auth.register.success", {"email": email})
    return Outcome(True, "auth.register.success", {"email": email}, user_id=user_id)


_DUMMY_HASH: dict[tuple[int, int, int], str] = {}


def authenticate(email_raw: str, password: str) -> User | None:
    """The user when the address and password match, else None (same cost either way)."""
    ph = hasher()
    email = emails.normalize(email_raw)
    with db.reading() as conn:
        user = find_by_email(conn, email) if email else None
    if user is None:
        params = (ph.time_cost, ph.memory_cost, ph.parallelism)
        if params not in _DUMMY_HASH:
            _DUMMY_HASH[params] = ph.hash(secrets.token_urlsafe(16))
        passwords.verify_password(ph, _DUMMY_HASH[params], password)
        return None
    if not passwords.verify_password(ph, user.password_hash, password):
        return None
    if passwords.needs_rehash(ph, user.password_hash):
        try:
            with db.transaction() as conn:
                fresh = get_user(conn, user.id)
                if fresh is not None:
                    append_to(
                        conn,
                        fresh,
                        NewEvent(
                            ev.PASSWORD_REHASHED,
                            {"password_hash": seal(conn, fresh, ph.hash(password))},
                        ),
                    )
        except VersionConflict:
            log.info("rehash skipped: concurrent change", extra={"user": user.id})
        with db.reading() as conn:
            user = get_user(conn, user.id) or user
    return user
