"""Signing out devices from the list: one ("Sign out"), or every one but this
("Sign out all other devices"). The sign-in row goes, so that browser's next
request (session or remember-me cookie alike) finds no live sign-in and lands
on /login; each device signed out is recorded ("Device signed out").

The caller has checked the fresh proof (proof.py). A handle that names none of
the user's other devices (another account's, made up, already signed out, or
this device's own) changes nothing."""

from __future__ import annotations

from flask_babel import gettext
from sqlalchemy import Connection, delete

from webapp.accounts.account import Account, Refusal
from webapp.accounts.result import Result, retry_on_conflict
from webapp.accounts.stream import append_to, fresh
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import User
from webapp.core import db
from webapp.devices.listing import Device, devices_of

SIGNED_OUT = "devices.signedOut"
OTHERS_SIGNED_OUT = "devices.othersSignedOut"
UNKNOWN = "devices.errors.unknown"
THIS_DEVICE = "devices.errors.thisDevice"


def _end(conn: Connection, user: User, device: Device) -> Refusal | None:
    """Delete its row and record it, at the account's version as read now."""
    row = fresh(conn, user)
    decision = Account(row).sign_out_device(
        device.browser or gettext("devices.unknownBrowser"),
        device.system or gettext("devices.unknownSystem"),
    )
    if isinstance(decision, Refusal):
        return decision
    append_to(conn, row, decision)
    conn.execute(delete(user_sessions).where(user_sessions.c.digest == device.digest))
    return None


def sign_out_device(user: User, handle: str) -> Result:
    """`user` as the session check loaded it (its `sign_in` is this device's)."""

    def attempt() -> Result:
        with db.transaction() as conn:
            devices = {d.handle: d for d in devices_of(conn, user, user.sign_in)}
            device = devices.get(handle)
            if device is None:
                return Result.error(UNKNOWN)
            if device.current:
                return Result.error(THIS_DEVICE)
            refused = _end(conn, user, device)
            if refused:
                return Result.refused(refused)
        return Result(True, SIGNED_OUT)

    return retry_on_conflict(attempt)


def sign_out_others(user: User) -> Result:
    """Every device but this one (`user` as the session check loaded it)."""

    def attempt() -> Result:
        with db.transaction() as conn:
            for device in devices_of(conn, user, user.sign_in):
                if not device.current:
                    refused = _end(conn, user, device)
                    if refused:
                        return Result.refused(refused)
        return Result(True, OTHERS_SIGNED_OUT)

    return retry_on_conflict(attempt)
