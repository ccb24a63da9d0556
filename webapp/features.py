"""Wires the features into the app. Dependencies point one way: features -> core."""

from __future__ import annotations

from flask import Flask


def init_app(app: Flask) -> None:
    from webapp import (
        accounts,
        admin,
        api,
        backup,
        devices,
        live,
        mail,
        privacy,
        profile,
        workflows,
    )
    from webapp.mail import outbox

    mail.init_app(app)
    outbox.init_app(app)
    accounts.init_app(app)
    devices.init_app(app)
    profile.init_app(app)
    workflows.init_app(app)
    privacy.init_app(app)
    admin.init_app(app)
    api.init_app(app)
    backup.init_app(app)
    live.init_app(app)
