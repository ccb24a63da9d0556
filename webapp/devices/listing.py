"""Your devices: every live sign-in of the account, most recently active first,
each with a handle for its "Sign out" button.

The handle is derived from the row's key (the sha256 of the browser's secret)
by another hash, so the page never shows the key itself; a handle is looked up
only among the signed-in user's own rows, so another account's handle, or
anything made up, names nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from flask_babel import gettext
from sqlalchemy import Connection, select

from webapp.accounts.signins import digest_of
from webapp.accounts.tables import user_sessions
from webapp.accounts.users import SignIn, User
from webapp.core import clock, db

_s = user_sessions.c


def handle_of(session_digest: str) -> str:
    return hashlib.sha256(f"device-handle:{session_digest}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Device:
    handle: str
    digest: str
    browser: str | None
    system: str | None
    address: str | None
    signed_in_at: datetime
    last_active_at: datetime
    current: bool  # "This device"


def devices_of(conn: Connection, user: User, sign_in: str) -> list[Device]:
    """`sign_in`: this browser's secret (the session's `User.sign_in`), which
    marks "This device"."""
    rows = conn.execute(
        select(_s.digest, _s.browser, _s.system, _s.address, _s.created_at, _s.last_active_at)
        .where(
            _s.tenant_id == user.tenant_id,
            _s.user_id == user.id,
            _s.expires_at > clock.now(),
        )
        .order_by(_s.created_at.desc(), _s.digest)
    )
    return devices_from(
        [
            SignIn(r.digest, r.browser, r.system, r.address, r.created_at, r.last_active_at)
            for r in rows
        ],
        sign_in,
    )


def devices_from(sign_ins: Iterable[SignIn], sign_in: str) -> list[Device]:
    """The device list of these live sign-ins, this browser's (`sign_in`) first."""
    current = digest_of(sign_in) if sign_in else None
    found = [
        Device(
            handle_of(r.digest),
            r.digest,
            r.browser,
            r.system,
            r.address,
            r.created_at,
            r.last_active_at or r.created_at,
            r.digest == current,
        )
        for r in sign_ins
    ]
    # This device first, then the others by when they were last active.
    return sorted(found, key=lambda d: (not d.current, -d.last_active_at.timestamp()))


class Listing:
    """The device list of one render, read when the template first asks (a
    fragment of another section never does)."""

    def __init__(self, user: User, sign_in: str) -> None:
        self.user, self.sign_in = user, sign_in

    @cached_property
    def devices(self) -> list[Device]:
        if self.user.sign_ins is not None:  # read with the session check
            return devices_from(self.user.sign_ins, self.sign_in)
        with db.reading() as conn:
            return devices_of(conn, self.user, self.sign_in)

    @property
    def others(self) -> list[Device]:
        return [d for d in self.devices if not d.current]

    def named(self, handle: str | None) -> str | None:
        """The name of the device `handle` names among this list, if any."""
        found = [d for d in self.devices if d.handle == handle]
        return self.name_of(found[0]) if found else None

    @staticmethod
    def name_of(device: Device) -> str:
        return gettext(
            "devices.name",
            browser=device.browser or gettext("devices.unknownBrowser"),
            system=device.system or gettext("devices.unknownSystem"),
        )

    @property
    def stamp(self) -> tuple[tuple[str, str, bool], ...]:
        """What the rendered list depends on beyond the account's row (a kept
        page is filed under it): the rows, their last activity, this device."""
        return tuple((d.handle, d.last_active_at.isoformat(), d.current) for d in self.devices)
