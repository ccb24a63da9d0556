"""Second factors: the authenticator app (TOTP, totp.py), passkeys
(WebAuthn: passkeys.py, challenges.py, passkey_commands.py, passkey_views.py
for signing in with one), recovery codes (recovery.py), the sign-in's second step (second_step.py, signin_views.py)
and the operator's reset (reset.py, cli.py). The commands (commands.py)
append the factor events to the user's stream (accounts/events.py); their
projection (projection.py) keeps `user_factors` and `recovery_codes`
(tables.py). The profile's section is webapp/profile/factors.py. Re-
authentication freshness, which these actions need, is accounts/reauth.py.
See docs/accounts.md, "Two-step verification"."""

from __future__ import annotations

from flask import Flask

from webapp.accounts.factors import cli, projection, tables
from webapp.accounts.factors.views import passkey as passkey_views
from webapp.accounts.factors.views import signin as signin_views

del cli, tables  # imported for their registrations (the command, the tables)


def init_app(app: Flask) -> None:
    projection.register()
    signin_views.init_app(app)
    passkey_views.init_app(app)
