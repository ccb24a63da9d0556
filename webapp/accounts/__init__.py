"""The accounts feature: the event-sourced user aggregate, sign-up and sign-in,
email verification and erasure."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register this feature's routes, projections and jobs."""
    from webapp.accounts import (
        erase_job,
        i18n,
        projection,
        ratelimit,
        reset_views,
        session,
        tables,
        views,
    )

    del erase_job, tables  # imported for their registrations
    projection.register()
    i18n.init_app(app)
    ratelimit.init_app(app)
    session.init_app(app)
    views.init_app(app)
    reset_views.init_app(app)
    _register_verification_workflow()


def _register_verification_workflow() -> None:
    """The verification reminder is the workflow engine's job (when it is there)."""
    try:
        from webapp.accounts import verification_workflow
    except ImportError:  # engine not installed: no reminder (the first mail is in the outbox)
        return
    verification_workflow.register()
