"""Sign in with an identity provider (docs/accounts.md, "Sign in with an
identity provider"): any OpenID Connect provider by its issuer URL, and the
GitHub and Google presets, configured by environment (webapp/core/
identity_providers.py).

    protocol.py    the provider round trip (Authlib, joserfc): request, answer, id_token
    flow.py        one round trip held in this browser's session
    commands.py    sign in, sign up, link, unlink (events, mails)
    store.py       the linked identities (`user_identities`, tables.py)
    projection.py  the events into that table; erasure deletes its rows
    views.py       the sign-in page's buttons, the callback, its pages

The profile's *Connected accounts* section is webapp/profile/connected.py."""

from __future__ import annotations

from flask import Flask

from webapp.accounts.identities import projection, tables, views

del tables  # imported for its registration (the table)


def init_app(app: Flask) -> None:
    projection.register()
    views.init_app(app)
