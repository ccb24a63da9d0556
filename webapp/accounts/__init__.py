"""The accounts feature: the `Account` and its rules (account.py), one module
per capability (registration, change_email, change_password, reset, signins,
language, deletion, restriction, erase_accounts, signin_codes; second factors in
factors/, re-authentication in reauth.py), the user stream's one event
declaration (events.py) and the `users` table's one writer (projection.py).
Code map: docs/accounts.md."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register this feature's routes, projections and jobs."""
    from webapp.accounts import (
        erase_accounts,
        factors,
        i18n,
        identities,
        projection,
        ratelimit,
        session,
        signin_codes,
        tables,
    )
    from webapp.accounts.views import auth, reset, signin_code

    del erase_accounts, tables  # imported for their registrations
    projection.register()
    signin_codes.register()  # erasure deletes the account's codes
    i18n.init_app(app)
    ratelimit.init_app(app)
    session.init_app(app)
    auth.init_app(app)
    reset.init_app(app)
    signin_code.init_app(app)
    factors.init_app(app)
    identities.init_app(app)
    _register_verification_workflow()


def _register_verification_workflow() -> None:
    """The verification reminder is the workflow engine's job (when it is there)."""
    try:
        from webapp.accounts import verification_workflow
    except ImportError:  # engine not installed: no reminder (the first mail is in the outbox)
        return
    verification_workflow.register()
