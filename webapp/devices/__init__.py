"""Your devices (docs/accounts.md, "Your devices"): every signed-in session of
the account listed on the profile with browser, system, shortened address,
when it signed in and was last active, and sign-out per device or of all
others; and the alert mail on a sign-in from a browser the account never used,
recognised by a long-lived signed device cookie.

    seen.py      what a request shows of its device (ua-parser, short address)
    cookie.py    the device cookie
    known.py     the browsers each account has used (`known_devices`)
    alert.py     at sign-in: the device noted, the new-device event and mail
    listing.py   the device list and its handles
    sign_out.py  signing devices out
    proof.py     the fresh-proof hook point (re-authentication)
    section.py   the profile section: form, route

Built on webapp.accounts (its sign-in rows, stream and mails); accounts
imports nothing from here: the sign-in calls `alert.on_sign_in` through
`signins.on_start`, and erasure reaches `known_devices` through the
`user.erased` inline projection."""

from __future__ import annotations

from flask import Flask

from webapp.accounts import signins
from webapp.devices import alert, known


def init_app(app: Flask) -> None:
    """Register the sign-in hook and the erasure projection (both idempotent);
    the profile adds the section's route (webapp/profile/views.py)."""
    signins.on_start(alert.on_sign_in)
    known.register()
